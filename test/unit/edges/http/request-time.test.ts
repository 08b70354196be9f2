import assert from 'node:assert/strict';
import net from 'node:net';
import { describe, it } from 'node:test';
import fastify from 'fastify';
import { registerBodyTimes, requestTimeOptions } from '../../../../edges/http/request-time.js';
import { sleep } from '../../../../tools/harness/time.js';

const REQUEST_TIMEOUT_MS = 3_000;
const DOOR_BODY_MS = 300;

/** A fastify app with the API's request clock: `/door` gives its body 300 ms, `/other` the 3 s of every request. */
async function timedApp() {
  const app = fastify(requestTimeOptions(REQUEST_TIMEOUT_MS));
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', { parseAs: 'buffer' }, (_request, body, done) => done(null, body));
  registerBodyTimes(app, REQUEST_TIMEOUT_MS, new Map([['/door', DOOR_BODY_MS]]));
  app.post('/door', (request, reply) => reply.send(`read ${(request.body as Buffer).length}`));
  app.post('/other', (request, reply) => reply.send(`read ${(request.body as Buffer).length}`));
  await app.listen({ host: '127.0.0.1', port: 0 });
  return { app, port: (app.server.address() as net.AddressInfo).port };
}

/** Sends `text` and resolves, once the server closed the connection, with what it answered and after how long. */
function sentAndClosed(port: number, text: string): Promise<{ answer: string; afterMs: number }> {
  const socket = net.connect(port, '127.0.0.1');
  const started = Date.now();
  let answer = '';
  socket.on('data', (chunk: Buffer) => (answer += chunk.toString('utf8')));
  socket.on('error', () => undefined);
  socket.write(text);
  return new Promise((resolve) => socket.once('close', () => resolve({ answer, afterMs: Date.now() - started })));
}

const slowBody = (path: string) =>
  `POST ${path} HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: 1000\r\n\r\n{"half":`;

function assertRequestTimeout(answer: string) {
  const [head = '', body = ''] = answer.split('\r\n\r\n');
  assert.match(head, /^HTTP\/1\.1 408 Request timeout\r\n/);
  assert.match(head, /\r\ncontent-type: application\/problem\+json\r\n/);
  assert.match(head, /\r\nconnection: close/);
  assert.deepEqual(JSON.parse(body), {
    type: '/problems/request-timeout',
    title: 'Request timeout',
    status: 408,
    detail: 'the request did not arrive in time; nothing was started, send it again',
  });
}

describe('the time a request has to arrive', () => {
  it('closes a body that stops half way at its door’s time, elsewhere at the request timeout, with a 408 problem', async () => {
    const { app, port } = await timedApp();
    try {
      const [door, other, headers] = await Promise.all([
        sentAndClosed(port, slowBody('/door')),
        sentAndClosed(port, slowBody('/other')),
        sentAndClosed(port, 'POST /other HTTP/1.1\r\nhost: x\r\n'),
      ]);
      for (const closed of [door, other, headers]) assertRequestTimeout(closed.answer);
      // The door's 300 ms, late by what a busy machine adds; the others no sooner than 3 s, checked
      // by the server once a second.
      assert.ok(door.afterMs < REQUEST_TIMEOUT_MS, `the door's body was closed after ${door.afterMs} ms`);
      for (const closed of [other, headers]) {
        assert.ok(closed.afterMs >= REQUEST_TIMEOUT_MS - 50, `closed after ${closed.afterMs} ms`);
        assert.ok(closed.afterMs < REQUEST_TIMEOUT_MS + 5_000, `closed after ${closed.afterMs} ms`);
      }
    } finally {
      await app.close();
    }
  });

  it('leaves a door’s connection alone once its body arrived whole', async () => {
    const { app, port } = await timedApp();
    const socket = net.connect(port, '127.0.0.1');
    let received = '';
    socket.on('data', (chunk: Buffer) => (received += chunk.toString('utf8')));
    const request = 'POST /door HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: 2\r\n\r\n{}';
    const answers = async (count: number) => {
      const deadline = Date.now() + 5_000;
      while ((received.match(/read 2/g) ?? []).length < count) {
        assert.ok(Date.now() < deadline, `answered: ${received}`);
        await sleep(10);
      }
    };
    try {
      socket.write(request);
      await answers(1);
      // Past the door's time: a timer left running would close the kept-alive connection now.
      await sleep(DOOR_BODY_MS * 2);
      socket.write(request);
      await answers(2);
      assert.equal(socket.destroyed, false);
    } finally {
      socket.destroy();
      await app.close();
    }
  });
});

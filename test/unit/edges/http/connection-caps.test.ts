import assert from 'node:assert/strict';
import http from 'node:http';
import net from 'node:net';
import { describe, it } from 'node:test';
import fastify from 'fastify';
import { capConnections, clientOf, type ConnectionLimits } from '../../../../edges/http/connection-caps.js';
import { registerBodyTimes } from '../../../../edges/http/request-time.js';

const quiet = { warn: () => undefined };

/** A fastify app whose `/slow` answers only when `release` is called, capped as the API is. */
async function cappedApp(limits: ConnectionLimits) {
  const app = fastify();
  registerBodyTimes(app, 60_000, new Map());
  let release = () => {};
  const released = new Promise<void>((resolve) => (release = resolve));
  let arrived = () => {};
  const handled = new Promise<void>((resolve) => (arrived = resolve));
  app.post('/slow', async () => {
    arrived();
    await released;
    return 'answered';
  });
  app.get('/', (_request, reply) => reply.send('ok'));
  const caps = capConnections(app.server, limits, quiet);
  await app.listen({ host: '127.0.0.1', port: 0 });
  const { port } = app.server.address() as net.AddressInfo;
  return { app, caps, port, release, handled };
}

interface Client {
  socket: net.Socket;
  /** Resolves with what the server sent before it closed the connection. */
  closed: Promise<string>;
}

/** A connection from `localAddress` (Linux routes all of 127/8 to the loopback). */
async function connect(port: number, localAddress = '127.0.0.1'): Promise<Client> {
  const socket = net.connect({ host: '127.0.0.1', port, localAddress });
  let received = '';
  socket.on('data', (chunk: Buffer) => (received += chunk.toString('latin1')));
  socket.on('error', () => undefined);
  const closed = new Promise<string>((resolve) => socket.once('close', () => resolve(received)));
  await new Promise<void>((resolve, reject) => {
    socket.once('connect', resolve);
    socket.once('error', reject);
  });
  return { socket, closed };
}

/** GET / on a connection of its own from `localAddress`: the status, or 0 when the connection was closed unread. */
function statusFrom(port: number, localAddress: string): Promise<number> {
  return new Promise((resolve) => {
    const request = http.get({ host: '127.0.0.1', port, path: '/', localAddress, agent: false }, (response) => {
      response.resume();
      resolve(response.statusCode ?? 0);
    });
    request.on('error', () => resolve(0));
  });
}

/** Waits until the server holds `count` connections, within a deadline. */
async function openReaches(caps: { open(): number }, count: number) {
  const deadline = Date.now() + 5_000;
  while (caps.open() !== count) {
    if (Date.now() > deadline) assert.fail(`${caps.open()} connections open, expected ${count}`);
    await new Promise((resolve) => setImmediate(resolve));
  }
}

describe('connection caps', () => {
  it('closes a client’s connection over its cap unread, and takes other clients’ meanwhile', async () => {
    const { app, caps, port } = await cappedApp({ maxConnections: 10, maxConnectionsPerClient: 2 });
    try {
      const held = [await connect(port, '127.0.0.2'), await connect(port, '127.0.0.2')];
      await openReaches(caps, 2);
      const third = await connect(port, '127.0.0.2');
      assert.equal(await third.closed, '', 'the third from 127.0.0.2 is closed before anything is answered');
      assert.equal(await statusFrom(port, '127.0.0.1'), 200, 'another client is answered');
      held[0]!.socket.destroy();
      await openReaches(caps, 1);
      assert.equal(await statusFrom(port, '127.0.0.2'), 200, 'a connection closed frees its client’s place');
      held[1]!.socket.destroy();
    } finally {
      await app.close();
    }
  });

  it('counts the connections another listening socket hands the server, as accept-sockets.ts does', async () => {
    const { app, caps, port } = await cappedApp({ maxConnections: 2, maxConnectionsPerClient: 2 });
    const other = net.createServer({ allowHalfOpen: true }, (connection) => app.server.emit('connection', connection));
    await new Promise<void>((resolve) => other.listen(0, '127.0.0.1', resolve));
    const otherPort = (other.address() as net.AddressInfo).port;
    try {
      const held = [await connect(otherPort, '127.0.0.3'), await connect(otherPort, '127.0.0.4')];
      await openReaches(caps, 2);
      assert.equal(await statusFrom(port, '127.0.0.1'), 0, 'the server’s own socket takes none over the cap');
      assert.equal(await statusFrom(otherPort, '127.0.0.1'), 0, 'nor does the other one');
      for (const client of held) client.socket.destroy();
      await openReaches(caps, 0);
      assert.equal(await statusFrom(otherPort, '127.0.0.1'), 200);
    } finally {
      await new Promise((resolve) => other.close(resolve));
      await app.close();
    }
  });

  it('closes at a stop what is not being answered, lets what is finish, and takes nothing new', async () => {
    const { app, caps, port, release, handled } = await cappedApp({ maxConnections: 10, maxConnectionsPerClient: 10 });
    try {
      const idle = await connect(port);
      const halfBody = await connect(port);
      halfBody.socket.write(
        'POST /slow HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: 100\r\n\r\n0123456789',
      );
      const halfHeaders = await connect(port);
      halfHeaders.socket.write('POST /slow HTTP/1.1\r\nhost: x\r\n');
      const answered = await connect(port);
      answered.socket.write(
        'POST /slow HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: 2\r\n\r\n{}',
      );
      await openReaches(caps, 4);
      await handled;
      assert.equal(caps.closeUnanswered(), 3);
      for (const client of [idle, halfBody, halfHeaders]) assert.equal(await client.closed, '');
      assert.equal(await statusFrom(port, '127.0.0.1'), 0, 'a new connection is closed unread');
      release();
      answered.socket.end();
      assert.match(await answered.closed, /^HTTP\/1\.1 200 OK[\s\S]*answered$/);
    } finally {
      release();
      await app.close();
    }
  });

  it('knows a client by its address, an IPv6 one by its /64', () => {
    assert.equal(clientOf('203.0.113.7'), '203.0.113.7');
    assert.equal(clientOf('::ffff:203.0.113.7'), '203.0.113.7');
    assert.equal(clientOf('2001:db8:1:2:3:4:5:6'), '2001:db8:1:2::/64');
    assert.equal(clientOf('2001:db8:1:2::9'), '2001:db8:1:2::/64');
    assert.equal(clientOf('2001:0db8:0001:0002:ffff::1'), '2001:db8:1:2::/64');
    assert.equal(clientOf('2001:db8::1'), '2001:db8:0:0::/64');
    assert.equal(clientOf('::1'), '0:0:0:0::/64');
    assert.equal(clientOf('fe80::1%eth0'), 'fe80:0:0:0::/64');
    assert.equal(clientOf(undefined), 'unknown');
  });
});

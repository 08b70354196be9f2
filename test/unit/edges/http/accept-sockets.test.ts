import assert from 'node:assert/strict';
import http from 'node:http';
import net from 'node:net';
import { describe, it } from 'node:test';
import fastify from 'fastify';
import fc from 'fast-check';
import {
  acceptSocketCount,
  DEFAULT_ACCEPT_SOCKETS,
  openAcceptSockets,
  reusePortAvailable,
  reusePortOptions,
} from '../../../../edges/http/accept-sockets.js';
import { ConfigError } from '../../../../services/config/environment.js';
import { listeningSockets } from '../../../../tools/harness/listening-sockets.js';

const HERE = reusePortAvailable(process.versions.node, process.platform);
const NEEDS_REUSE_PORT = HERE ? false : `SO_REUSEPORT needs Linux and Node.js 22.12 or later, not ${process.version}`;

/** An HTTP server listening on `count` sockets of one loopback port, as the API does. */
async function listening(count: number, handler: http.RequestListener = (_req, res) => res.end('ok')) {
  const server = http.createServer(handler);
  await new Promise<void>((resolve) =>
    server.listen(count > 1 ? reusePortOptions('127.0.0.1', 0) : { host: '127.0.0.1', port: 0 }, resolve),
  );
  const extra = await openAcceptSockets(server, count, (error) => {
    throw error;
  });
  const { port } = server.address() as net.AddressInfo;
  return { server, extra, port };
}

/** Connections waiting in the accept queues of the loopback sockets listening on `port`. */
function queuedOn(port: number): number {
  return listeningSockets(port).reduce((sum, socket) => sum + socket.queued, 0);
}

/**
 * Opens `connections` connections at once, while the loop has not turned yet, so all of them wait
 * in the kernel's queue together, and counts the loop's turns until the server has accepted them.
 */
async function turnsToAccept(count: number, connections: number): Promise<number> {
  const { server, extra, port } = await listening(count);
  let turn = 0;
  let accepted = 0;
  let lastAcceptTurn = -1;
  server.on('connection', () => {
    accepted += 1;
    lastAcceptTurn = turn;
  });
  const clients = Array.from({ length: connections }, () => net.connect(port, '127.0.0.1'));
  // The connects run on the next tick, before this one; then wait, without letting the loop turn,
  // until the kernel holds every connection in the queues (a busy machine completes loopback
  // handshakes in a thread of its own, a little later).
  await new Promise<void>((resolve, reject) =>
    process.nextTick(() => {
      const deadline = Date.now() + 10_000;
      while (queuedOn(port) < connections) {
        if (Date.now() > deadline) return reject(new Error(`${queuedOn(port)} of ${connections} connections queued`));
      }
      resolve();
    }),
  );
  await new Promise<void>((resolve, reject) => {
    const deadline = Date.now() + 10_000;
    const next = () => {
      turn += 1;
      if (accepted === connections) resolve();
      else if (Date.now() > deadline) reject(new Error(`${accepted} of ${connections} accepted after ${turn} turns`));
      else setImmediate(next);
    };
    setImmediate(next);
  });
  for (const client of clients) client.destroy();
  extra.stop();
  server.closeAllConnections();
  await Promise.all([new Promise((resolve) => server.close(resolve)), extra.closed()]);
  return lastAcceptTurn;
}

describe('accept sockets', () => {
  it('shares the port among several sockets only where the runtime offers SO_REUSEPORT', () => {
    assert.equal(reusePortAvailable('24.22.3', 'linux'), true);
    assert.equal(reusePortAvailable('v22.12.0', 'linux'), true);
    assert.equal(reusePortAvailable('23.1.0', 'linux'), true);
    assert.equal(reusePortAvailable('22.11.0', 'linux'), false);
    assert.equal(reusePortAvailable('23.0.0', 'linux'), false);
    assert.equal(reusePortAvailable('20.20.2', 'linux'), false);
    assert.equal(reusePortAvailable('24.22.3', 'darwin'), false);
  });

  it('listens on 8 sockets by default where it can, on one elsewhere, and on what HTTP_ACCEPT_SOCKETS says', () => {
    const modern = { nodeVersion: '24.22.3', platform: 'linux' as const };
    const old = { nodeVersion: '20.20.2', platform: 'linux' as const };
    assert.equal(acceptSocketCount(undefined, modern), DEFAULT_ACCEPT_SOCKETS);
    assert.equal(acceptSocketCount(undefined, old), 1);
    assert.equal(acceptSocketCount(3, modern), 3);
    assert.equal(acceptSocketCount(1, old), 1);
  });

  it('refuses more than one socket where the runtime cannot share the port, naming the setting and the runtime', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 2, max: 64 }),
        fc.oneof(
          fc.record({ nodeVersion: fc.constantFrom('20.20.2', '22.11.0', '18.20.4'), platform: fc.constant('linux') }),
          fc.record({ nodeVersion: fc.constant('24.22.3'), platform: fc.constantFrom('darwin', 'win32') }),
        ),
        (setting, runtime) => {
          assert.throws(
            () => acceptSocketCount(setting, runtime),
            (error: unknown) =>
              error instanceof ConfigError &&
              error.message.includes(`HTTP_ACCEPT_SOCKETS: ${setting}`) &&
              error.message.includes(runtime.nodeVersion),
          );
        },
      ),
    );
  });

  it(
    'takes a wave of queued connections several per turn of the event loop, where one socket takes one',
    { skip: NEEDS_REUSE_PORT },
    async () => {
      // libuv accepts once per socket and turn: one socket needs a turn per connection.
      const alone = await turnsToAccept(1, 64);
      assert.ok(alone >= 60, `one socket took 64 connections in ${alone} turns`);
      const shared = await turnsToAccept(DEFAULT_ACCEPT_SOCKETS, 64);
      assert.ok(shared <= 32, `${DEFAULT_ACCEPT_SOCKETS} sockets took 64 connections in ${shared} turns`);
    },
  );

  it(
    'answers the requests the other sockets brought in while the server closes, closes their idle ones, then accepts nothing',
    { skip: NEEDS_REUSE_PORT, timeout: 60_000 },
    async () => {
      const app = fastify();
      let open: () => void = () => undefined;
      const gate = new Promise<void>((resolve) => (open = resolve));
      let arrived = 0;
      let allArrived: () => void = () => undefined;
      const arrivedAll = new Promise<void>((resolve) => (allArrived = resolve));
      app.get('/fast', () => 'fast');
      app.get('/slow', async () => {
        arrived += 1;
        if (arrived === 16) allArrived();
        await gate;
        return 'done';
      });
      await app.listen(reusePortOptions('127.0.0.1', 0));
      const extra = await openAcceptSockets(app.server, 4, (error) => {
        throw error;
      });
      const { port } = app.server.address() as net.AddressInfo;
      const get = (path: string, agent: http.Agent | false) =>
        new Promise<{ status: number; body: string }>((resolve, reject) => {
          http
            .get({ host: '127.0.0.1', port, path, agent }, (res) => {
              let body = '';
              res.on('data', (chunk: Buffer) => (body += chunk.toString()));
              res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
            })
            .on('error', reject);
        });
      // Kept-alive connections left idle, which the close must not wait for.
      const keptAlive = new http.Agent({ keepAlive: true });
      assert.deepEqual(
        await Promise.all(Array.from({ length: 8 }, () => get('/fast', keptAlive))),
        Array.from({ length: 8 }, () => ({ status: 200, body: 'fast' })),
      );
      // Sixteen requests, each on a connection of its own, spread by the kernel over the four sockets.
      const answers = Promise.all(Array.from({ length: 16 }, () => get('/slow', false)));
      await arrivedAll;
      extra.stop();
      const closing = app.close();
      // The answers go out only once the server has stopped listening.
      while (app.server.listening) await new Promise((resolve) => setImmediate(resolve));
      open();
      const results = await answers;
      await closing;
      await extra.closed();
      keptAlive.destroy();
      assert.deepEqual(
        results.map((result) => `${result.status} ${result.body}`),
        Array.from({ length: 16 }, () => '200 done'),
      );
      await assert.rejects(
        new Promise((resolve, reject) => net.connect(port, '127.0.0.1').on('connect', resolve).on('error', reject)),
        /ECONNREFUSED/,
      );
    },
  );
});

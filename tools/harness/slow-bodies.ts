// A stranger with slow bodies, as a process of its own: it opens connections from one address, each
// sending the headers of a 256 KiB POST and 200,000 bytes of its body, then nothing, and notes what
// the server answers and when it closes each. It runs at the priority of any other process: on a
// test machine it shares the API's cores, which a stranger on the network would not, so the test
// counts the API's work by its own thread's CPU time, and the connections the API holds by the
// kernel's table, not by the wall clock or by when the stranger hears. `slowBodies` forks it; run
// alone, this file is that process, driven by the messages below.
import { fork } from 'node:child_process';
import net from 'node:net';
import { fileURLToPath } from 'node:url';
import { listeningSockets } from './listening-sockets.js';
import { sleep } from './time.js';

export const DECLARED_BODY_BYTES = 256 * 1024;
export const SENT_BODY_BYTES = 200_000;

export interface SlowBodiesOrder {
  port: number;
  /** The path each connection POSTs to. */
  path: string;
  count: number;
  /** The stranger's address (Linux routes all of 127/8 to the loopback). */
  from: string;
  /** How many connect at once: the next wave once the API has taken the last from its accept queue. */
  wave: number;
}

/** One slow connection, in epoch milliseconds. */
export interface SlowConnection {
  openedAt: number;
  /** When the server closed it; undefined while open. */
  closedAt: number | undefined;
  /** The status line the server answered before closing, if any. */
  answer: string | undefined;
}

type ToStranger = { kind: 'open'; order: SlowBodiesOrder } | { kind: 'report' } | { kind: 'stop' };
type FromStranger =
  | { kind: 'opened'; connections: SlowConnection[] }
  | { kind: 'report'; connections: SlowConnection[] };

export interface Stranger {
  /** Opens the connections; resolves once all of them are open (or already closed by the server). */
  open(order: SlowBodiesOrder): Promise<SlowConnection[]>;
  /** Every connection opened so far, as it stands now. */
  report(): Promise<SlowConnection[]>;
  /** Closes whatever is still open and ends the process. */
  stop(): Promise<void>;
}

/** Starts the stranger's process. */
export function slowBodies(): Stranger {
  const child = fork(fileURLToPath(import.meta.url), [], { execArgv: ['--import', 'tsx'], stdio: 'inherit' });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const ask = (message: ToStranger, answer: FromStranger['kind']) =>
    new Promise<SlowConnection[]>((resolve, reject) => {
      const onMessage = (reply: FromStranger) => {
        if (reply.kind !== answer) return;
        child.off('message', onMessage);
        child.off('exit', onExit);
        resolve(reply.connections);
      };
      const onExit = (code: number | null) => reject(new Error(`the stranger's process exited (${code})`));
      child.on('message', onMessage);
      child.once('exit', onExit);
      child.send(message);
    });
  return {
    open: (order) => ask({ kind: 'open', order }, 'opened'),
    report: () => ask({ kind: 'report' }, 'report'),
    stop: async () => {
      if (child.exitCode === null && child.signalCode === null) child.send({ kind: 'stop' } satisfies ToStranger);
      await exited;
    },
  };
}

async function openSlowBodies(order: SlowBodiesOrder, into: SlowConnection[], sockets: net.Socket[]): Promise<void> {
  const head = Buffer.from(
    `POST ${order.path} HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\n` +
      `content-length: ${DECLARED_BODY_BYTES}\r\n\r\n`,
  );
  const body = Buffer.alloc(SENT_BODY_BYTES, 'a');
  for (let opened = 0; opened < order.count; opened += order.wave) {
    const wave = Array.from({ length: Math.min(order.wave, order.count - opened) }, () => {
      const socket = net.connect({ host: '127.0.0.1', port: order.port, localAddress: order.from });
      const connection: SlowConnection = { openedAt: Date.now(), closedAt: undefined, answer: undefined };
      into.push(connection);
      sockets.push(socket);
      socket.on('error', () => undefined);
      // Read what the server says: a socket that reads nothing never learns it was closed.
      socket.on('data', (chunk: Buffer) => (connection.answer ??= chunk.toString('latin1').split('\r\n')[0]));
      socket.once('close', () => (connection.closedAt = Date.now()));
      return new Promise<void>((resolve) => {
        socket.once('close', () => resolve());
        socket.once('connect', () => {
          connection.openedAt = Date.now();
          socket.write(head);
          socket.write(body);
          resolve();
        });
      });
    });
    await Promise.all(wave);
    const deadline = Date.now() + 30_000;
    while (!listeningSockets(order.port).every((listening) => listening.queued === 0)) {
      if (Date.now() > deadline) throw new Error('the API did not take its accept queue within 30 s');
      await sleep(5);
    }
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url) && process.send) {
  // The test that forked it is gone: so is the stranger.
  process.on('disconnect', () => process.exit(0));
  const connections: SlowConnection[] = [];
  const sockets: net.Socket[] = [];
  const send = (message: FromStranger) => process.send?.(message);
  process.on('message', (message: ToStranger) => {
    if (message.kind === 'open') {
      const before = connections.length;
      void openSlowBodies(message.order, connections, sockets).then(
        () => send({ kind: 'opened', connections: connections.slice(before) }),
        (error: unknown) => {
          console.error(error);
          process.exit(1);
        },
      );
    } else if (message.kind === 'report') send({ kind: 'report', connections });
    else {
      for (const socket of sockets) socket.destroy();
      process.exit(0);
    }
  });
}

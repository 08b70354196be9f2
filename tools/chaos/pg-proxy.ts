// A TCP proxy between the worker and PostgreSQL that understands just enough of the wire protocol
// to inject the faults that matter for exactly-once: it lets a COMMIT through and cuts the
// connection before the server's "COMMIT" reply reaches the client (the outcome-unknown case), it
// resets connections at random, and it delays replies beyond the activity's timeout; a test may also
// have it hold COMMIT replies back, a database slow to commit.
import net from 'node:net';
import type { Random } from './prng.js';

export interface PgProxyFaults {
  /** Chance that a COMMIT's reply is swallowed and the connection cut after the server committed. */
  lostCommitReply: number;
  /** Chance per transaction (at its BEGIN) that the connection is reset on the spot. */
  reset: number;
  /** Chance per transaction (at its BEGIN) that the server's replies are held back for `latencyMs`. */
  latency: number;
  latencyMs: number;
  /**
   * Chance per transaction (at its COMMIT) that the COMMIT's reply is held back for `slowCommitMs`:
   * its statements ran at once, and it keeps its connection that long. Unset, no draw is made, so
   * a seeded run's faults stay those of its seed.
   */
  slowCommit?: number;
  slowCommitMs?: number;
}

export interface PgProxyCounts {
  connections: number;
  lostCommitReplies: number;
  resets: number;
  latencies: number;
  slowCommits: number;
}

export interface PgProxy {
  port: number;
  counts: PgProxyCounts;
  /** Faults apply only while enabled; the drain phase turns them off. */
  setEnabled: (enabled: boolean) => void;
  /**
   * Whatever the odds, the next transactions meet each fault once — a reset, a delayed reply, a
   * lost COMMIT reply — so even a short run proves every kind fired.
   */
  forceEachOnce: () => void;
  close: () => Promise<void>;
}

/** Splits a byte stream into protocol messages: [type][int32 length incl. itself][payload]. */
class MessageReader {
  private buffer = Buffer.alloc(0);
  constructor(private expectStartup: boolean) {}
  push(chunk: Buffer): Buffer[] {
    this.buffer = Buffer.concat([this.buffer, chunk]);
    const messages: Buffer[] = [];
    for (;;) {
      if (this.expectStartup) {
        if (this.buffer.length < 4) break;
        const length = this.buffer.readInt32BE(0);
        if (this.buffer.length < length) break;
        messages.push(this.buffer.subarray(0, length));
        this.buffer = this.buffer.subarray(length);
        this.expectStartup = false;
        continue;
      }
      if (this.buffer.length < 5) break;
      const length = this.buffer.readInt32BE(1);
      if (this.buffer.length < length + 1) break;
      messages.push(this.buffer.subarray(0, length + 1));
      this.buffer = this.buffer.subarray(length + 1);
    }
    return messages;
  }
}

const isStatement = (message: Buffer, keyword: RegExp) =>
  (message[0] === 0x51 /* Q */ || message[0] === 0x50) /* P */ && keyword.test(message.subarray(5).toString('utf8'));
const isBeginRequest = (message: Buffer) => isStatement(message, /(^|\0)\s*BEGIN\b/i);
const isCommitRequest = (message: Buffer) =>
  (message[0] === 0x51 /* Q */ || message[0] === 0x50) /* P */ &&
  /\bCOMMIT\b/i.test(message.subarray(5).toString('utf8'));
const isCommitComplete = (message: Buffer) =>
  message[0] === 0x43 /* C */ && message.subarray(5).toString('utf8').startsWith('COMMIT');

export async function startPgProxy(options: {
  targetPort: number;
  random: Random;
  faults: PgProxyFaults;
}): Promise<PgProxy> {
  const counts: PgProxyCounts = { connections: 0, lostCommitReplies: 0, resets: 0, latencies: 0, slowCommits: 0 };
  let enabled = true;
  let forceLostCommit = false;
  let forceReset = false;
  let forceLatency = false;
  const sockets = new Set<net.Socket>();
  const { random, faults } = options;

  const server = net.createServer((client) => {
    counts.connections += 1;
    const upstream = net.connect({ port: options.targetPort, host: '127.0.0.1' });
    sockets.add(client);
    sockets.add(upstream);
    const fromClient = new MessageReader(true);
    const fromServer = new MessageReader(false);
    let cutOnCommitReply = false;
    let holdUntil = 0;
    let toClient: Promise<void> = Promise.resolve();
    let closed = false;
    const cut = () => {
      if (closed) return;
      closed = true;
      client.destroy();
      upstream.destroy();
      sockets.delete(client);
      sockets.delete(upstream);
    };
    client.on('error', cut);
    upstream.on('error', cut);
    client.on('close', cut);
    upstream.on('close', cut);

    client.on('data', (chunk: Buffer) => {
      for (const message of fromClient.push(chunk)) {
        if (closed) return;
        const begins = enabled && isBeginRequest(message);
        const forcedReset = begins && forceReset;
        const forcedLatency = begins && !forcedReset && forceLatency;
        if (forcedReset) forceReset = false;
        if (forcedLatency) forceLatency = false;
        if (forcedReset || (begins && random() < faults.reset)) {
          counts.resets += 1;
          cut();
          return;
        }
        if (enabled && isCommitRequest(message) && (forceLostCommit || random() < faults.lostCommitReply)) {
          forceLostCommit = false;
          cutOnCommitReply = true;
        }
        if (forcedLatency || (begins && random() < faults.latency)) {
          counts.latencies += 1;
          holdUntil = Date.now() + faults.latencyMs;
        }
        const { slowCommit, slowCommitMs = 0 } = faults;
        if (enabled && slowCommit !== undefined && isCommitRequest(message) && random() < slowCommit) {
          counts.slowCommits += 1;
          holdUntil = Math.max(holdUntil, Date.now() + slowCommitMs);
        }
        upstream.write(message);
      }
    });

    upstream.on('data', (chunk: Buffer) => {
      for (const message of fromServer.push(chunk)) {
        if (closed) return;
        if (cutOnCommitReply && isCommitComplete(message)) {
          // The server has committed; the client never learns it.
          counts.lostCommitReplies += 1;
          cut();
          return;
        }
        // Replies leave in order; a held reply holds back everything after it.
        const deliverAt = holdUntil;
        toClient = toClient.then(async () => {
          const delay = deliverAt - Date.now();
          if (delay > 0) await new Promise((resolve) => setTimeout(resolve, delay));
          if (!closed) client.write(message);
        });
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  return {
    port,
    counts,
    setEnabled: (value) => {
      enabled = value;
    },
    forceEachOnce: () => {
      forceReset = true;
      forceLatency = true;
      forceLostCommit = true;
    },
    close: async () => {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

// The chaos run's fault proxy between the worker and MySQL/MariaDB: pg-proxy.ts's faults in
// MySQL's wire protocol. It reads just enough of it — packets are a 3-byte length, a sequence
// number and a payload; a command starts a sequence at 0, and COM_QUERY (0x03) carries SQL text,
// which is how the driver sends BEGIN and COMMIT — to let a COMMIT through and cut the connection
// when the server's answer to it arrives (the outcome-unknown case), to reset connections at a
// BEGIN, and to hold a transaction's answers back past the activity's timeout. The server is the
// machine's own, which the run cannot restart: `unreachableFor` cuts every connection and refuses
// new ones for a while, which is what a restart looks like from the worker.
import net from 'node:net';
import type { PgProxy, PgProxyCounts, PgProxyFaults } from './pg-proxy.js';
import type { Random } from './prng.js';

export interface MysqlProxy extends PgProxy {
  /** Cuts every connection and refuses new ones for `ms`. */
  unreachableFor: (ms: number) => Promise<void>;
}

/** Splits a byte stream into MySQL packets. */
class PacketReader {
  private buffer = Buffer.alloc(0);
  push(chunk: Buffer): Buffer[] {
    this.buffer = Buffer.concat([this.buffer, chunk]);
    const packets: Buffer[] = [];
    while (this.buffer.length >= 4) {
      const length = this.buffer.readUIntLE(0, 3);
      if (this.buffer.length < length + 4) break;
      packets.push(this.buffer.subarray(0, length + 4));
      this.buffer = this.buffer.subarray(length + 4);
    }
    return packets;
  }
}

/** The SQL of a COM_QUERY that starts a command, upper-cased; undefined for any other packet. */
function queryText(packet: Buffer): string | undefined {
  if (packet[3] !== 0 || packet[4] !== 0x03) return undefined;
  return packet.subarray(5).toString('utf8').trimStart().toUpperCase();
}

export async function startMysqlProxy(options: {
  target: { host: string; port: number };
  random: Random;
  faults: PgProxyFaults;
}): Promise<MysqlProxy> {
  const counts: PgProxyCounts = { connections: 0, lostCommitReplies: 0, resets: 0, latencies: 0, slowCommits: 0 };
  let enabled = true;
  let forceLostCommit = false;
  let forceReset = false;
  let forceLatency = false;
  let refusingUntil = 0;
  const cuts = new Set<() => void>();
  const { random, faults } = options;

  const server = net.createServer((client) => {
    if (Date.now() < refusingUntil) {
      client.destroy();
      return;
    }
    counts.connections += 1;
    const upstream = net.connect(options.target);
    const fromClient = new PacketReader();
    let cutOnNextReply = false;
    let holdUntil = 0;
    let toClient: Promise<void> = Promise.resolve();
    let closed = false;
    const cut = () => {
      if (closed) return;
      closed = true;
      client.destroy();
      upstream.destroy();
      cuts.delete(cut);
    };
    cuts.add(cut);
    client.on('error', cut);
    upstream.on('error', cut);
    client.on('close', cut);
    upstream.on('close', cut);

    client.on('data', (chunk: Buffer) => {
      for (const packet of fromClient.push(chunk)) {
        if (closed) return;
        const text = enabled ? queryText(packet) : undefined;
        const begins = text?.startsWith('BEGIN') === true || text?.startsWith('START TRANSACTION') === true;
        const commits = text?.startsWith('COMMIT') === true;
        const forcedReset = begins && forceReset;
        const forcedLatency = begins && !forcedReset && forceLatency;
        if (forcedReset) forceReset = false;
        if (forcedLatency) forceLatency = false;
        if (forcedReset || (begins && random() < faults.reset)) {
          counts.resets += 1;
          cut();
          return;
        }
        if (commits && (forceLostCommit || random() < faults.lostCommitReply)) {
          forceLostCommit = false;
          cutOnNextReply = true;
        }
        if (forcedLatency || (begins && random() < faults.latency)) {
          counts.latencies += 1;
          holdUntil = Date.now() + faults.latencyMs;
        }
        upstream.write(packet);
      }
    });

    // The client waits for each answer before its next command inside a transaction, so the first
    // bytes after a COMMIT are its answer: the server has committed, and the client never learns it.
    upstream.on('data', (chunk: Buffer) => {
      if (closed) return;
      if (cutOnNextReply) {
        counts.lostCommitReplies += 1;
        cut();
        return;
      }
      // Answers leave in order; a held answer holds back everything after it.
      const deliverAt = holdUntil;
      toClient = toClient.then(async () => {
        const delay = deliverAt - Date.now();
        if (delay > 0) await new Promise((resolve) => setTimeout(resolve, delay));
        if (!closed) client.write(chunk);
      });
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
    unreachableFor: async (ms) => {
      refusingUntil = Date.now() + ms;
      for (const cut of [...cuts]) cut();
      await new Promise((resolve) => setTimeout(resolve, ms));
    },
    close: async () => {
      for (const cut of [...cuts]) cut();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

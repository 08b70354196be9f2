// A TCP proxy in front of a server — the Temporal frontend, the message broker, an API process —
// for faults of the connection: answers that come late, answers that never come (the server acted,
// the caller never hears), and the server unreachable. gRPC is HTTP/2 over one connection and AMQP
// multiplexes channels over one, so these are faults of the whole connection, as a network would
// produce them. Used by the start-path tests, the broker tests, the explorer, and the gateway test,
// where an API's answers come after nginx gave up on them.
import net from 'node:net';

export type TcpProxyMode =
  /** Bytes flow both ways. */
  | { kind: 'pass' }
  /** Every answer reaches the caller `ms` after it arrived, in order. */
  | { kind: 'delay-replies'; ms: number }
  /** Requests reach the server; every answer is dropped; the connection stays open until the mode changes. */
  | { kind: 'swallow-replies' }
  /**
   * The next request on each connection reaches the server, then every answer on that connection
   * is dropped and the connection is cut `cutAfterMs` later: the start may have happened, the
   * caller never learns it.
   */
  | { kind: 'lose-next-answer'; cutAfterMs: number }
  /**
   * Once, on whichever connection carries it: the first request whose bytes contain `containing`
   * reaches the server, every answer on that connection is then dropped, and the connection is cut
   * `cutAfterMs` later. The mode then returns to `pass`, so the caller's retry gets through. For a
   * broker: the publish is queued, its confirm never arrives.
   */
  | { kind: 'lose-one-answer'; containing: string; cutAfterMs: number }
  /**
   * Nothing gets through either way: a call hangs until its own deadline and never reaches the
   * server. Leaving this mode cuts the connections it held (their streams are broken).
   */
  | { kind: 'blackhole' }
  /** Not listening: a connect is refused, so the caller knows nothing was sent. Open ones are cut. */
  | { kind: 'refuse' };

export interface TcpProxy {
  port: number;
  /** `127.0.0.1:<port>`, for TEMPORAL_ADDRESS. */
  address: string;
  mode(): TcpProxyMode;
  setMode(mode: TcpProxyMode): Promise<void>;
  /** How many requests were forwarded whose answer was then dropped (`lose-next-answer`, `lose-one-answer`). */
  lostAnswers(): number;
  /** Destroys every open connection: the caller sees its calls fail mid-flight. */
  cutAll(): void;
  close(): Promise<void>;
}

/**
 * A gRPC call that carries a workflow start is far larger than HTTP/2's own frames (settings,
 * pings, window updates): a chunk this big from the caller is taken for the request to lose.
 */
const REQUEST_BYTES = 300;

export async function startTcpProxy(target: string): Promise<TcpProxy> {
  const separator = target.lastIndexOf(':');
  const host = target.slice(0, separator);
  const targetPort = Number(target.slice(separator + 1));
  let mode: TcpProxyMode = { kind: 'pass' };
  let lost = 0;
  const sockets = new Set<net.Socket>();

  const onConnection = (client: net.Socket) => {
    const upstream = net.connect({ port: targetPort, host });
    sockets.add(client);
    sockets.add(upstream);
    let swallowing = false;
    const cut = () => {
      client.destroy();
      upstream.destroy();
      sockets.delete(client);
      sockets.delete(upstream);
    };
    client.on('error', cut).on('close', cut);
    upstream.on('error', cut).on('close', cut);
    // This request reaches the server; its answer, and every later one, never reaches the caller.
    const loseAnswerTo = (chunk: Buffer, cutAfterMs: number) => {
      swallowing = true;
      lost += 1;
      upstream.write(chunk);
      setTimeout(cut, cutAfterMs);
    };
    client.on('data', (chunk: Buffer) => {
      if (mode.kind === 'blackhole') return;
      if (mode.kind === 'lose-next-answer' && !swallowing && chunk.length >= REQUEST_BYTES) {
        loseAnswerTo(chunk, mode.cutAfterMs);
        return;
      }
      if (mode.kind === 'lose-one-answer' && !swallowing && chunk.includes(mode.containing)) {
        loseAnswerTo(chunk, mode.cutAfterMs);
        mode = { kind: 'pass' };
        return;
      }
      if (!swallowing) upstream.write(chunk);
    });
    // Answers leave in order; a held answer holds back everything after it.
    let toClient: Promise<void> = Promise.resolve();
    upstream.on('data', (chunk: Buffer) => {
      if (swallowing || mode.kind === 'swallow-replies' || mode.kind === 'blackhole') return;
      const holdUntil = mode.kind === 'delay-replies' ? Date.now() + mode.ms : 0;
      toClient = toClient.then(async () => {
        const delay = holdUntil - Date.now();
        if (delay > 0) await new Promise((resolve) => setTimeout(resolve, delay));
        if (!swallowing && !client.destroyed) client.write(chunk);
      });
    });
  };

  const cutAll = () => {
    for (const socket of sockets) socket.destroy();
    sockets.clear();
  };
  const listen = (server: net.Server, at: number) =>
    new Promise<number>((resolve, reject) => {
      server.once('error', reject);
      server.listen(at, '127.0.0.1', () => resolve((server.address() as net.AddressInfo).port));
    });
  const stop = (server: net.Server) =>
    new Promise<void>((resolve) => {
      cutAll();
      server.close(() => resolve());
    });

  let server = net.createServer(onConnection);
  const port = await listen(server, 0);

  return {
    port,
    address: `127.0.0.1:${port}`,
    mode: () => mode,
    lostAnswers: () => lost,
    cutAll,
    setMode: async (next) => {
      // Bytes that never arrived leave a connection no protocol can resume (HTTP/2's framing and
      // header tables are out of step): as on a real network, the line that lost them is cut.
      const lostBytes = mode.kind === 'blackhole' || mode.kind === 'swallow-replies';
      if (lostBytes && next.kind !== mode.kind) cutAll();
      const wasRefusing = mode.kind === 'refuse';
      mode = next;
      if (next.kind === 'refuse' && !wasRefusing) {
        await stop(server);
      } else if (next.kind !== 'refuse' && wasRefusing) {
        server = net.createServer(onConnection);
        await listen(server, port);
      }
    },
    close: async () => {
      if (mode.kind !== 'refuse') await stop(server);
    },
  };
}

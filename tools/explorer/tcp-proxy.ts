// A TCP proxy between the API and Temporal that the explorer controls: it passes bytes through,
// refuses connections (Temporal unreachable: nothing can be sent), or lets a start request
// through and then drops the connection before any answer comes back (the start may have
// happened; the caller never learns it), or holds Temporal's answers back for a while (a slow
// Temporal: the start happens at once, the caller hears of it late).
import net from 'node:net';

export type TcpProxyMode = 'pass' | 'refuse' | 'lose-answer' | 'slow-answers';

/** How long answers are held back in `slow-answers` mode: below the API's start deadline. */
export const SLOW_ANSWER_MS = 2_000;

export interface TcpProxy {
  port: number;
  mode: () => TcpProxyMode;
  setMode: (mode: TcpProxyMode) => Promise<void>;
  /** How many requests were forwarded whose answer was then dropped. */
  lostAnswers: () => number;
  close: () => Promise<void>;
}

/**
 * A gRPC call that carries a workflow start is far larger than HTTP/2's own frames (settings,
 * pings, window updates): a chunk this big from the client is taken for the request to lose.
 */
const REQUEST_BYTES = 300;

export async function startTcpProxy(targetPort: number): Promise<TcpProxy> {
  let mode: TcpProxyMode = 'pass';
  let lost = 0;
  const sockets = new Set<net.Socket>();
  let port = 0;

  const onConnection = (client: net.Socket) => {
    const upstream = net.connect({ port: targetPort, host: '127.0.0.1' });
    sockets.add(client);
    sockets.add(upstream);
    let swallowing = false;
    const cut = () => {
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
      if (mode === 'lose-answer' && !swallowing && chunk.length >= REQUEST_BYTES) {
        // The request reaches Temporal; whatever it answers is thrown away, then the line goes dead.
        swallowing = true;
        lost += 1;
        upstream.write(chunk);
        setTimeout(cut, 1_500);
        return;
      }
      if (!swallowing) upstream.write(chunk);
    });
    // Answers leave in order; a held answer holds back everything after it.
    let toClient: Promise<void> = Promise.resolve();
    upstream.on('data', (chunk: Buffer) => {
      if (swallowing) return;
      const holdUntil = mode === 'slow-answers' ? Date.now() + SLOW_ANSWER_MS : 0;
      toClient = toClient.then(async () => {
        const delay = holdUntil - Date.now();
        if (delay > 0) await new Promise((resolve) => setTimeout(resolve, delay));
        if (!swallowing && !client.destroyed) client.write(chunk);
      });
    });
  };

  let server = net.createServer(onConnection);
  const listen = (on: net.Server, at: number) =>
    new Promise<number>((resolve, reject) => {
      on.once('error', reject);
      on.listen(at, '127.0.0.1', () => resolve((on.address() as net.AddressInfo).port));
    });
  const closeServer = () =>
    new Promise<void>((resolve) => {
      for (const socket of sockets) socket.destroy();
      sockets.clear();
      server.close(() => resolve());
    });
  port = await listen(server, 0);

  return {
    port,
    mode: () => mode,
    lostAnswers: () => lost,
    setMode: async (next) => {
      if (next === mode) return;
      const wasRefusing = mode === 'refuse';
      mode = next;
      if (next === 'refuse') {
        // Not listening at all: a connect is refused, so the caller knows nothing was sent.
        await closeServer();
      } else if (wasRefusing) {
        server = net.createServer(onConnection);
        await listen(server, port);
      }
    },
    close: async () => {
      if (mode !== 'refuse') await closeServer();
    },
  };
}

// A TCP proxy in front of the Temporal dev server, for the start path's faults: replies that come
// late, replies that never come (the server acted, the caller never hears), connections refused.
// gRPC is HTTP/2 over one connection, so these are faults of the whole connection, as a network
// would produce them.
import { createConnection, createServer, type Socket } from 'node:net';

export type ProxyMode =
  /** Bytes flow both ways. */
  | { kind: 'pass' }
  /** The server's bytes reach the caller `ms` later, in order. */
  | { kind: 'delay-replies'; ms: number }
  /** The caller's bytes reach the server; the server's bytes are dropped. */
  | { kind: 'swallow-replies' }
  /** New connections are closed at once (open ones are left alone; see `cutAll`). */
  | { kind: 'refuse' };

export interface TcpProxy {
  /** `127.0.0.1:<port>`, for TEMPORAL_ADDRESS. */
  address: string;
  setMode(mode: ProxyMode): void;
  /** Destroys every open connection: the caller sees its calls fail mid-flight. */
  cutAll(): void;
  close(): Promise<void>;
}

export async function startTcpProxy(target: string): Promise<TcpProxy> {
  const separator = target.lastIndexOf(':');
  const host = target.slice(0, separator);
  const port = Number(target.slice(separator + 1));
  let mode: ProxyMode = { kind: 'pass' };
  const open = new Set<Socket>();

  const server = createServer((client) => {
    if (mode.kind === 'refuse') {
      client.destroy();
      return;
    }
    const upstream = createConnection({ host, port });
    open.add(client);
    open.add(upstream);
    let replies = Promise.resolve();
    const closeBoth = () => {
      client.destroy();
      upstream.destroy();
      open.delete(client);
      open.delete(upstream);
    };
    client.on('error', closeBoth).on('close', closeBoth);
    upstream.on('error', closeBoth).on('close', closeBoth);
    client.on('data', (chunk: Buffer) => upstream.write(chunk));
    upstream.on('data', (chunk: Buffer) => {
      const now = mode;
      if (now.kind === 'swallow-replies') return;
      if (now.kind === 'delay-replies') {
        // Each chunk is due `ms` after it arrived; the chain keeps them in order.
        const due = Date.now() + now.ms;
        replies = replies
          .then(() => new Promise((resolve) => setTimeout(resolve, Math.max(0, due - Date.now()))))
          .then(() => void (client.destroyed || client.write(chunk)));
        return;
      }
      // Keep order behind any chunk still being delayed.
      replies = replies.then(() => void (client.destroyed || client.write(chunk)));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  if (typeof address !== 'object' || !address) throw new Error('the proxy has no port');

  return {
    address: `127.0.0.1:${address.port}`,
    setMode: (next) => {
      mode = next;
    },
    cutAll: () => {
      for (const socket of open) socket.destroy();
      open.clear();
    },
    close: async () => {
      for (const socket of open) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

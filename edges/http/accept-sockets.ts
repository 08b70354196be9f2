// How many listening sockets the API accepts its connections on, and the extra ones themselves.
// Since libuv 1.45 (Node.js 20.3 on) a listening socket is accepted from once per turn of the event
// loop, whatever its queue holds; a busy process — a burst's requests in flight, a hosted worker —
// turns every 10–100 ms, so a wave of new connections waited seconds in the kernel's queue, unseen
// by any deadline counted in the process. Several sockets on the port (SO_REUSEPORT) are each
// accepted from once per turn: the wave is taken that many times faster (docs/architecture.md,
// decision 36).
import type { Server as HttpServer } from 'node:http';
import net from 'node:net';
import { ConfigError } from '../../services/config/environment.js';

/** Sockets per API process where the runtime can share a port among them. */
export const DEFAULT_ACCEPT_SOCKETS = 8;

/**
 * True where `listen({ reusePort: true })` works: Linux, on Node.js 22.12 and later in the 22 line,
 * 23.1 and later. Node.js 20 ignores the option, and a second socket on the port fails to bind.
 */
export function reusePortAvailable(nodeVersion: string, platform: NodeJS.Platform): boolean {
  if (platform !== 'linux') return false;
  const [major = 0, minor = 0] = nodeVersion.replace(/^v/, '').split('.').map(Number);
  if (major === 22) return minor >= 12;
  if (major === 23) return minor >= 1;
  return major > 23;
}

/**
 * The sockets to listen on: HTTP_ACCEPT_SOCKETS when set, else DEFAULT_ACCEPT_SOCKETS where the
 * runtime can, else one. More than one where the runtime cannot is a ConfigError naming both.
 */
export function acceptSocketCount(
  setting: number | undefined,
  runtime: { nodeVersion: string; platform: NodeJS.Platform } = {
    nodeVersion: process.versions.node,
    platform: process.platform,
  },
): number {
  const available = reusePortAvailable(runtime.nodeVersion, runtime.platform);
  if (setting === undefined) return available ? DEFAULT_ACCEPT_SOCKETS : 1;
  if (setting > 1 && !available) {
    throw new ConfigError([
      `HTTP_ACCEPT_SOCKETS: ${setting} sockets on one port need SO_REUSEPORT, which Node.js ` +
        `${runtime.nodeVersion} on ${runtime.platform} does not offer (Linux, Node.js 22.12 or later); set 1 or leave it unset`,
    ]);
  }
  return setting;
}

export interface AcceptSockets {
  /** Stops accepting on the extra sockets (the connections they took stay with the HTTP server). */
  stop(): void;
  /** Resolves once every connection the extra sockets took has closed. */
  closed(): Promise<void>;
}

/**
 * Opens `count - 1` more sockets beside `server`'s own, which must already listen with
 * `reusePort: true`, on the same address and port, and hands each connection they accept to
 * `server` as if it had accepted it: the same routes, limits, socket options and shutdown.
 * `onError`: a socket that fails after it listens (an accept failing for want of descriptors).
 */
export async function openAcceptSockets(
  server: HttpServer,
  count: number,
  onError: (error: Error) => void,
): Promise<AcceptSockets> {
  const address = server.address();
  if (count <= 1 || address === null || typeof address === 'string') {
    return { stop: () => undefined, closed: () => Promise.resolve() };
  }
  const extra: net.Server[] = [];
  try {
    for (let i = 1; i < count; i += 1) {
      // The options an HTTP server gives the sockets it accepts itself.
      const listener = net.createServer({ allowHalfOpen: true, noDelay: true, keepAlive: false }, (connection) =>
        server.emit('connection', connection),
      );
      extra.push(listener);
      await new Promise<void>((resolve, reject) => {
        listener.once('error', reject);
        listener.listen(reusePortOptions(address.address, address.port), () => {
          listener.off('error', reject);
          listener.on('error', onError);
          resolve();
        });
      });
    }
  } catch (error) {
    for (const listener of extra) listener.close();
    throw error;
  }
  const closed = extra.map((listener) => new Promise<void>((resolve) => listener.once('close', () => resolve())));
  return {
    stop: () => {
      for (const listener of extra) if (listener.listening) listener.close();
    },
    closed: () => Promise.all(closed).then(() => undefined),
  };
}

/**
 * Fails as a plain listen would (EADDRINUSE) when something already listens on `host`:`port`:
 * sockets that share a port would otherwise join it silently — a second instance on the same
 * address, or an old one not yet gone — and take a share of its connections. Port 0 is always free.
 */
export async function portIsFree(host: string, port: number): Promise<void> {
  if (port === 0) return;
  const probe = net.createServer();
  await new Promise<void>((resolve, reject) => {
    probe.once('error', reject);
    probe.listen({ host, port, exclusive: true }, () => resolve());
  });
  await new Promise<void>((resolve) => probe.close(() => resolve()));
}

/** Listen options that share the port; `reusePort` is the runtime's from Node.js 22.12 on, not yet in these types. */
export function reusePortOptions(host: string, port: number): net.ListenOptions {
  return { host, port, reusePort: true } as net.ListenOptions;
}

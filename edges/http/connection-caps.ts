// How many connections the API keeps open, in all and from one client address. Each connection may
// hold a body of up to 256 KiB while it arrives (edges/http/request-time.ts bounds for how long), so
// their number bounds the memory strangers can hold: a connection over HTTP_MAX_CONNECTIONS, or
// over HTTP_MAX_CONNECTIONS_PER_CLIENT from its address, is closed before a byte of it is read.
// Counted at the HTTP server's 'connection' event, which also sees the connections the port's other
// listening sockets hand it (edges/http/accept-sockets.ts): Node's own `server.maxConnections`
// counts only those its own socket accepted. At a stop, what is not being answered closes
// (docs/architecture.md, decision 44).
import type { Server as HttpServer } from 'node:http';
import { isIPv4, isIPv6, type Socket } from 'node:net';
import type { Logger } from 'pino';
import { isAnswering } from './request-time.js';

export interface ConnectionLimits {
  maxConnections: number;
  maxConnectionsPerClient: number;
}

export interface ConnectionCaps {
  /** The connections open now. */
  open(): number;
  /**
   * For a stop: closes every connection that carries no request arrived whole — idle ones, ones
   * whose headers or body are still coming — and from now on every new one, until the listening
   * sockets are closed. What is being answered finishes. Returns how many it closed.
   */
  closeUnanswered(): number;
}

/** How often at most a refused connection is logged (with the count since the last line). */
const REFUSAL_LOG_INTERVAL_MS = 10_000;

/**
 * Whose connection it is, for the per-client cap: an IPv4 address (also IPv4-mapped IPv6) as it
 * is; an IPv6 address by its /64, the block one subscriber is given, whose 2^64 addresses would
 * otherwise each count as a client of their own.
 */
export function clientOf(address: string | undefined): string {
  if (address === undefined) return 'unknown';
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address)?.[1];
  if (mapped && isIPv4(mapped)) return mapped;
  if (!isIPv6(address)) return address;
  const [head = '', tail = ''] = address.split('%')[0]!.split('::');
  const headGroups = head ? head.split(':') : [];
  const tailGroups = tail ? tail.split(':') : [];
  const groups = address.includes('::')
    ? [...headGroups, ...Array<string>(8 - headGroups.length - tailGroups.length).fill('0'), ...tailGroups]
    : headGroups;
  return `${groups
    .slice(0, 4)
    .map((group) => parseInt(group, 16).toString(16))
    .join(':')}::/64`;
}

/** Caps `server`'s connections: every one it is handed, whichever listening socket accepted it. */
export function capConnections(
  server: HttpServer,
  limits: ConnectionLimits,
  log: Pick<Logger, 'warn'>,
): ConnectionCaps {
  const open = new Set<Socket>();
  const perClient = new Map<string, number>();
  let refusedSinceLog = 0;
  let lastLogAt = 0;
  let stopping = false;
  const refuse = (socket: Socket, client: string, over: string) => {
    socket.destroy();
    refusedSinceLog += 1;
    const now = Date.now();
    if (now - lastLogAt < REFUSAL_LOG_INTERVAL_MS) return;
    log.warn(
      {
        client,
        over,
        refused: refusedSinceLog,
        open: open.size,
        maxConnections: limits.maxConnections,
        maxConnectionsPerClient: limits.maxConnectionsPerClient,
      },
      'connections closed unread: over the cap of open connections',
    );
    refusedSinceLog = 0;
    lastLogAt = now;
  };
  server.on('connection', (socket: Socket) => {
    if (stopping) return void socket.destroy();
    const client = clientOf(socket.remoteAddress);
    const fromClient = perClient.get(client) ?? 0;
    if (open.size >= limits.maxConnections) return refuse(socket, client, 'HTTP_MAX_CONNECTIONS');
    if (fromClient >= limits.maxConnectionsPerClient) return refuse(socket, client, 'HTTP_MAX_CONNECTIONS_PER_CLIENT');
    open.add(socket);
    perClient.set(client, fromClient + 1);
    socket.once('close', () => {
      open.delete(socket);
      const left = (perClient.get(client) ?? 1) - 1;
      if (left > 0) perClient.set(client, left);
      else perClient.delete(client);
    });
  });
  return {
    open: () => open.size,
    closeUnanswered: () => {
      stopping = true;
      let closed = 0;
      for (const socket of open) {
        if (isAnswering(socket)) continue;
        socket.destroy();
        closed += 1;
      }
      return closed;
    },
  };
}

// The kernel's table of TCP sockets (/proc/net/tcp), as `ss -ltn` reads it: the IPv4 sockets
// listening on a port, each with the connections waiting in its accept queue.
import { readFileSync } from 'node:fs';

/** One row per IPv4 socket listening on `port`: `queued` connections wait to be accepted. */
export function listeningSockets(port: number): { queued: number }[] {
  const hexPort = `:${port.toString(16).toUpperCase().padStart(4, '0')}`;
  return readFileSync('/proc/net/tcp', 'utf8')
    .split('\n')
    .slice(1)
    .map((line) => line.trim().split(/\s+/))
    .filter(([, local, , state]) => local?.endsWith(hexPort) && state === '0A')
    .map((fields) => ({ queued: parseInt(fields[4]?.split(':')[1] ?? '0', 16) }));
}

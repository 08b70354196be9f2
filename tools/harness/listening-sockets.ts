// The kernel's table of TCP sockets (/proc/net/tcp), as `ss -tn` reads it: the IPv4 sockets
// listening on a port, each with the connections waiting in its accept queue, and those established.
import { readFileSync } from 'node:fs';

/** The table's rows on the side of local port `port`, each split into its fields. */
function rowsOnPort(port: number): string[][] {
  const hexPort = `:${port.toString(16).toUpperCase().padStart(4, '0')}`;
  return readFileSync('/proc/net/tcp', 'utf8')
    .split('\n')
    .slice(1)
    .map((line) => line.trim().split(/\s+/))
    .filter(([, local]) => local?.endsWith(hexPort));
}

/** One row per IPv4 socket listening on `port`: `queued` connections wait to be accepted. */
export function listeningSockets(port: number): { queued: number }[] {
  return rowsOnPort(port)
    .filter(([, , , state]) => state === '0A')
    .map((fields) => ({ queued: parseInt(fields[4]?.split(':')[1] ?? '0', 16) }));
}

/** An IPv4 address as /proc/net/tcp writes it: its bytes as one little-endian hex word. */
export function kernelHex(address: string): string {
  return address
    .split('.')
    .reverse()
    .map((byte) => Number(byte).toString(16).toUpperCase().padStart(2, '0'))
    .join('');
}

/** How many connections from `address` to `port` the kernel holds established on the server's side. */
export function establishedFrom(port: number, address: string): number {
  const hexAddress = `${kernelHex(address)}:`;
  return rowsOnPort(port).filter(([, , remote, state]) => remote?.startsWith(hexAddress) && state === '01').length;
}

// A server that speaks just enough of PostgreSQL's protocol to end every connection as it is made:
// it accepts any startup and answers "ready" and a fast shutdown's FATAL (57P01) in one write, so
// the client reads both at once. What a real server does only by chance, as it shuts down just as
// a connection completes, this does every time.
import net from 'node:net';

/** A backend message: its type byte, its length (itself included) and its body. */
function message(type: string, body: Buffer): Buffer {
  const length = Buffer.alloc(4);
  length.writeInt32BE(body.length + 4);
  return Buffer.concat([Buffer.from(type), length, body]);
}

const AUTHENTICATION_OK = message('R', Buffer.from([0, 0, 0, 0]));
const READY_FOR_QUERY = message('Z', Buffer.from('I'));
const ADMIN_SHUTDOWN = message(
  'E',
  Buffer.concat([
    ...[
      ['S', 'FATAL'],
      ['V', 'FATAL'],
      ['C', '57P01'],
      ['M', 'terminating connection due to administrator command'],
    ].map(([field, value]) => Buffer.from(`${field}${value}\0`)),
    Buffer.from([0]),
  ]),
);

export interface PostgresThatEndsConnections {
  /** A postgresql:// URL to it (any user, password and database are taken). */
  url: string;
  /** How many connections it has ended. */
  ended: () => number;
  close: () => Promise<void>;
}

export async function startPostgresThatEndsConnections(): Promise<PostgresThatEndsConnections> {
  let ended = 0;
  const server = net.createServer((socket) => {
    socket.on('error', () => undefined);
    socket.once('data', () => {
      ended += 1;
      socket.end(Buffer.concat([AUTHENTICATION_OK, READY_FOR_QUERY, ADMIN_SHUTDOWN]));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  return {
    url: `postgresql://orders:secret@127.0.0.1:${port}/orders`,
    ended: () => ended,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

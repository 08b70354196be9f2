// A fake of Feishu's long-connection service, speaking the protocol the official SDK's WSClient
// speaks: endpoint discovery (`POST /callback/ws/endpoint` with the app id and secret, answered
// with a WebSocket URL that carries a single-use ticket, and the client config), then a gateway
// that accepts the WebSocket for that ticket and exchanges binary protobuf frames — `pbbp2.Frame`
// with its `pbbp2.Header`s, the field numbers of the SDK's generated code — over it: the client's
// ping answered by a pong that carries the client config; an event as a data frame (`type: event`,
// `message_id`, `sum`/`seq` when split), acknowledged by the client echoing the frame with a
// payload `{"code": 200}`, or another code when its handler threw.
//
// Like Feishu, it pushes each event to one connection and sends it again until a 200 comes back:
// when the connection it went to closes before the ack, when the ack says another code, or when no
// ack comes within 3 s. A test pushes events, reads the acks, loses an ack on purpose (the
// connection dropped as the ack arrives), drops every connection, and takes the whole service away
// and back (discovery answers 503 and the gateway stops listening meanwhile).
import { randomBytes } from 'node:crypto';
import { EventEmitter } from 'node:events';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import protobuf from 'protobufjs';
import { type WebSocket, WebSocketServer } from 'ws';
import type { Answer } from './fake-oa-api.js';

/** The frame's `method`: control frames (ping, pong) and data frames (events and their acks). */
const CONTROL = 0;
const DATA = 1;
export const DISCOVERY_PATH = '/callback/ws/endpoint';
const GATEWAY_PATH = '/ws/v2';

/** `pbbp2.Header` and `pbbp2.Frame`, as the SDK's generated code declares them (proto2, required fields). */
const pbbp2 = new protobuf.Namespace('pbbp2')
  .add(
    new protobuf.Type('Header')
      .add(new protobuf.Field('key', 1, 'string', 'required'))
      .add(new protobuf.Field('value', 2, 'string', 'required')),
  )
  .add(
    new protobuf.Type('Frame')
      .add(new protobuf.Field('SeqID', 1, 'uint64', 'required'))
      .add(new protobuf.Field('LogID', 2, 'uint64', 'required'))
      .add(new protobuf.Field('service', 3, 'int32', 'required'))
      .add(new protobuf.Field('method', 4, 'int32', 'required'))
      .add(new protobuf.Field('headers', 5, 'Header', 'repeated'))
      .add(new protobuf.Field('payloadEncoding', 6, 'string', 'optional'))
      .add(new protobuf.Field('payloadType', 7, 'string', 'optional'))
      .add(new protobuf.Field('payload', 8, 'bytes', 'optional'))
      .add(new protobuf.Field('LogIDNew', 9, 'string', 'optional')),
  );
new protobuf.Root().add(pbbp2);
const FrameType = pbbp2.lookupType('Frame');

export interface Frame {
  SeqID: number;
  LogID: number;
  service: number;
  method: number;
  headers: { key: string; value: string }[];
  payload?: Uint8Array;
}

export function encodeFrame(frame: Frame): Uint8Array {
  return FrameType.encode(FrameType.fromObject(frame)).finish();
}

export function decodeFrame(bytes: Uint8Array): Frame {
  const object = FrameType.toObject(FrameType.decode(bytes), { longs: Number, arrays: true }) as Frame;
  return { ...object, headers: object.headers ?? [] };
}

export const headerOf = (frame: Frame, key: string): string | undefined =>
  frame.headers.find((header) => header.key === key)?.value;

/** What discovery hands the client besides the URL; seconds, as Feishu gives them. */
export interface ClientConfig {
  PingInterval: number;
  ReconnectCount: number;
  ReconnectInterval: number;
  ReconnectNonce: number;
}

/** Short, test-mode values: a lost connection is retried within a second. */
const TEST_CLIENT_CONFIG: ClientConfig = {
  PingInterval: 2,
  ReconnectCount: -1,
  ReconnectInterval: 0.5,
  ReconnectNonce: 0.5,
};

export interface PushOptions {
  /** `one` (Feishu's cluster mode: one connection, the next in turn) or `all` (a copy to every open connection at once). */
  to?: 'one' | 'all';
  /** The connection the first delivery goes to, by number (see `openConnections`); redeliveries take turns. */
  connection?: number;
  /** The first connection that acks it is dropped as the ack arrives, and the ack is not counted. */
  loseAck?: boolean;
  /** Split the payload over this many frames (`sum` and `seq`). */
  fragments?: number;
}

export interface Ack {
  pushId: string;
  messageId: string;
  connection: number;
  code: number;
  /** It came after Feishu's deadline for it, when the event had been sent again. */
  late: boolean;
  /** What the ack carries for Feishu (a card click's answer), decoded from its base64 JSON; undefined: nothing. */
  data?: unknown;
}

export interface FakeFeishuLongConnection {
  /** Answers the discovery request, or undefined when the request is another (the open API's). */
  discovery(method: string, url: URL, body: unknown): Answer | undefined;
  /** Pushes an event body as Feishu would; resolves once it was sent to a connection, with its id. */
  push(payload: Record<string, unknown>, options?: PushOptions): Promise<string>;
  /** Every ack that arrived (lost ones not included), in order. */
  acks(pushId?: string): Ack[];
  /** Resolves with the push's first 200 ack in time. */
  acknowledged(pushId: string, timeoutMs?: number): Promise<Ack>;
  /** How many times the push was sent (redeliveries included). */
  deliveries(pushId: string): number;
  /** The connections open now, by number; each new connection has the next number. */
  openConnections(): number[];
  /** Resolves once `count` connections are open. */
  connected(count: number, timeoutMs?: number): Promise<void>;
  /** How many pings the gateway answered. */
  pings(): number;
  /** Closes every open connection (a network blip); the clients reconnect through discovery. */
  dropConnections(): void;
  /** The service goes away: connections dropped, the gateway stops listening, discovery answers 503. */
  stop(): Promise<void>;
  /** … and comes back, on a new gateway port that discovery hands out. */
  restart(): Promise<void>;
  /** Every discovery URL and ticket issued: secrets no output of the service may show. */
  issuedUrls(): string[];
  issuedTickets(): string[];
  close(): Promise<void>;
}

interface Push {
  id: string;
  payload: Uint8Array;
  options: PushOptions;
  done: boolean;
  /** No connection was open when it was due: it goes to the next one that opens. */
  waiting: boolean;
  deliveries: number;
  /** The deliveries sent and not yet answered: message id → connection. */
  outstanding: Map<string, number>;
  timers: Set<NodeJS.Timeout>;
}

export function createFakeFeishuLongConnection(options: {
  appId: string;
  appSecret: string;
  clientConfig?: Partial<ClientConfig>;
  /** How long Feishu waits for an ack before it sends the event again. */
  ackTimeoutMs?: number;
  /** How long after a failing ack (code ≠ 200) it sends the event again. */
  redeliveryDelayMs?: number;
}): FakeFeishuLongConnection {
  const clientConfig: ClientConfig = { ...TEST_CLIENT_CONFIG, ...options.clientConfig };
  const ackTimeoutMs = options.ackTimeoutMs ?? 3_000;
  const redeliveryDelayMs = options.redeliveryDelayMs ?? 200;
  const serviceId = 1000 + Math.floor(Math.random() * 9000);
  const events = new EventEmitter();
  // Each push waited for listens here; a load of approvals waits for many at once.
  events.setMaxListeners(0);
  const tickets = new Set<string>();
  const issuedUrls: string[] = [];
  const issuedTickets: string[] = [];
  /** The connections ready for events: open, and pinged at least once. */
  const sockets = new Map<number, WebSocket>();
  const pushes = new Map<string, Push>();
  const byMessage = new Map<string, Push>();
  const acks: Ack[] = [];
  /** The deliveries whose ack arrived (each counts once). */
  const answered = new Set<string>();
  let nextConnection = 1;
  let turn = 0;
  let pings = 0;
  let seq = 1;
  let away = false;
  let gateway: { server: http.Server; port: number } | undefined;
  const wss = new WebSocketServer({ noServer: true });

  const send = (socket: WebSocket, frame: Frame) => socket.send(encodeFrame(frame));

  const deliver = (push: Push, connection: number) => {
    const socket = sockets.get(connection);
    if (!socket) return;
    push.deliveries += 1;
    const messageId = `${push.id}.${push.deliveries}`;
    push.outstanding.set(messageId, connection);
    byMessage.set(messageId, push);
    const parts = Math.max(1, push.options.fragments ?? 1);
    const size = Math.ceil(push.payload.length / parts);
    for (let index = 0; index < parts; index += 1) {
      send(socket, {
        SeqID: seq++,
        LogID: 0,
        service: serviceId,
        method: DATA,
        headers: [
          { key: 'type', value: 'event' },
          { key: 'message_id', value: messageId },
          { key: 'sum', value: String(parts) },
          { key: 'seq', value: String(index) },
          { key: 'trace_id', value: randomBytes(8).toString('hex') },
        ],
        payload: push.payload.subarray(index * size, (index + 1) * size),
      });
    }
    const timer = setTimeout(() => {
      push.timers.delete(timer);
      if (push.outstanding.delete(messageId)) redeliver(push);
    }, ackTimeoutMs);
    push.timers.add(timer);
    events.emit('delivered', push.id);
  };

  /** Sends the push to the next open connection in turn, or waits for one to open. */
  const redeliver = (push: Push) => {
    if (push.done) return;
    const open = [...sockets.keys()];
    push.waiting = open.length === 0;
    if (push.waiting) return;
    if (push.deliveries === 0 && push.options.to === 'all') {
      for (const connection of open) deliver(push, connection);
      return;
    }
    const first = push.options.connection;
    if (push.deliveries === 0 && first !== undefined && sockets.has(first)) return deliver(push, first);
    deliver(push, open[turn++ % open.length] as number);
  };

  const onAck = (connection: number, frame: Frame) => {
    const messageId = headerOf(frame, 'message_id') ?? '';
    const push = byMessage.get(messageId);
    if (!push || answered.has(messageId)) return;
    // An ack after its deadline is recorded, and changes nothing: the event was sent again already.
    const late = !push.outstanding.has(messageId);
    if (!late && push.options.loseAck && !push.done) {
      // The ack never reaches Feishu: the connection goes before it, and the event is pending still.
      push.options = { ...push.options, loseAck: false };
      sockets.get(connection)?.terminate();
      return;
    }
    answered.add(messageId);
    push.outstanding.delete(messageId);
    let code = 0;
    let data: unknown;
    try {
      const ack = JSON.parse(Buffer.from(frame.payload ?? []).toString('utf8')) as { code?: number; data?: string };
      code = ack.code ?? 0;
      if (typeof ack.data === 'string') data = JSON.parse(Buffer.from(ack.data, 'base64').toString('utf8'));
    } catch {
      code = 0;
    }
    acks.push({ pushId: push.id, messageId, connection, code, late, ...(data === undefined ? {} : { data }) });
    events.emit('ack', push.id);
    if (push.done || late) return;
    if (code === 200) {
      // Done; the acks of copies still out are recorded as they come, and nothing is sent again.
      push.done = true;
      for (const timer of push.timers) clearTimeout(timer);
      push.timers.clear();
      return;
    }
    if (push.outstanding.size === 0) {
      const timer = setTimeout(() => {
        push.timers.delete(timer);
        redeliver(push);
      }, redeliveryDelayMs);
      push.timers.add(timer);
    }
  };

  const onConnection = (socket: WebSocket) => {
    const connection = nextConnection++;
    // Events go to a connection once it pinged: WSClient listens for frames only after its first
    // ping is sent, and a frame that arrives before would be lost (then sent again after 3 s).
    const ready = () => {
      if (sockets.has(connection)) return;
      sockets.set(connection, socket);
      events.emit('connections');
      for (const push of pushes.values()) if (push.waiting) redeliver(push);
    };
    socket.on('message', (data: Buffer) => {
      let frame: Frame;
      try {
        frame = decodeFrame(data);
      } catch {
        return;
      }
      if (frame.method === CONTROL && headerOf(frame, 'type') === 'ping') {
        pings += 1;
        setImmediate(ready);
        send(socket, {
          SeqID: 0,
          LogID: 0,
          service: serviceId,
          method: CONTROL,
          headers: [{ key: 'type', value: 'pong' }],
          payload: Buffer.from(JSON.stringify(clientConfig)),
        });
      } else if (frame.method === DATA) onAck(connection, frame);
    });
    socket.on('close', () => {
      if (!sockets.delete(connection)) return;
      // What went to this connection unanswered is sent again, to another one or on the next connect.
      for (const push of pushes.values()) {
        const lost = [...push.outstanding].filter(([, to]) => to === connection).map(([messageId]) => messageId);
        for (const messageId of lost) push.outstanding.delete(messageId);
        if (lost.length > 0 && push.outstanding.size === 0) redeliver(push);
      }
      events.emit('connections');
    });
  };

  const startGateway = async () => {
    const server = http.createServer((_request, response) => response.writeHead(404).end());
    server.on('upgrade', (request, socket, head) => {
      const url = new URL(request.url ?? '/', 'http://127.0.0.1');
      const ticket = url.searchParams.get('ticket') ?? '';
      if (url.pathname !== GATEWAY_PATH || !tickets.delete(ticket)) {
        socket.end('HTTP/1.1 403 Forbidden\r\nhandshake-status: 403\r\n\r\n');
        return;
      }
      wss.handleUpgrade(request, socket, head, onConnection);
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    gateway = { server, port: (server.address() as AddressInfo).port };
  };
  const stopGateway = async () => {
    for (const client of wss.clients) client.terminate();
    const current = gateway;
    gateway = undefined;
    if (!current) return;
    current.server.closeAllConnections();
    await new Promise<void>((resolve) => current.server.close(() => resolve()));
  };
  const gatewayReady = startGateway();

  const until = (event: string, done: () => boolean, what: string, timeoutMs: number) =>
    new Promise<void>((resolve, reject) => {
      if (done()) return resolve();
      const timer = setTimeout(() => {
        events.off(event, check);
        reject(new Error(`timed out after ${timeoutMs} ms waiting for ${what}`));
      }, timeoutMs);
      const check = () => {
        if (!done()) return;
        clearTimeout(timer);
        events.off(event, check);
        resolve();
      };
      events.on(event, check);
    });

  return {
    discovery: (method, url, body) => {
      if (method !== 'POST' || url.pathname !== DISCOVERY_PATH) return undefined;
      if (away || !gateway) return { status: 503, body: { code: 503, msg: 'service unavailable' } };
      const credentials = body as { AppID?: string; AppSecret?: string } | undefined;
      if (credentials?.AppID !== options.appId || credentials.AppSecret !== options.appSecret) {
        return { status: 200, body: { code: 514, msg: 'auth failed', data: {} } };
      }
      const ticket = randomBytes(16).toString('hex');
      const accessKey = randomBytes(16).toString('hex');
      tickets.add(ticket);
      issuedTickets.push(ticket, accessKey);
      const URL =
        `ws://127.0.0.1:${gateway.port}${GATEWAY_PATH}?fpid=493&aid=552564` +
        `&device_id=${randomBytes(6).toString('hex')}&access_key=${accessKey}&service_id=${serviceId}&ticket=${ticket}`;
      issuedUrls.push(URL);
      return { status: 200, body: { code: 0, msg: 'ok', data: { URL, ClientConfig: clientConfig } } };
    },
    push: async (payload, pushOptions = {}) => {
      await gatewayReady;
      const push: Push = {
        id: `m-${randomBytes(6).toString('hex')}`,
        payload: Buffer.from(JSON.stringify(payload), 'utf8'),
        options: pushOptions,
        done: false,
        waiting: false,
        deliveries: 0,
        outstanding: new Map(),
        timers: new Set(),
      };
      pushes.set(push.id, push);
      redeliver(push);
      await until('delivered', () => push.deliveries > 0, `a connection to push ${push.id} to`, 30_000);
      return push.id;
    },
    acks: (pushId) => acks.filter((ack) => pushId === undefined || ack.pushId === pushId),
    acknowledged: async (pushId, timeoutMs = 30_000) => {
      const ok = () => acks.find((ack) => ack.pushId === pushId && ack.code === 200 && !ack.late);
      await until('ack', () => ok() !== undefined, `a 200 ack of ${pushId}`, timeoutMs);
      return ok() as Ack;
    },
    deliveries: (pushId) => pushes.get(pushId)?.deliveries ?? 0,
    openConnections: () => [...sockets.keys()],
    connected: (count, timeoutMs = 30_000) =>
      until('connections', () => sockets.size >= count, `${count} open connections`, timeoutMs),
    pings: () => pings,
    dropConnections: () => {
      for (const client of wss.clients) client.terminate();
    },
    stop: async () => {
      away = true;
      await gatewayReady;
      await stopGateway();
    },
    restart: async () => {
      if (!gateway) await startGateway();
      away = false;
    },
    issuedUrls: () => [...issuedUrls],
    issuedTickets: () => [...issuedTickets],
    close: async () => {
      for (const push of pushes.values()) for (const timer of push.timers) clearTimeout(timer);
      await gatewayReady;
      await stopGateway();
      wss.close();
    },
  };
}

// A fake of DingTalk's Stream gateway, speaking the protocol as DingTalk's clients expect it, on
// the fake DingTalk open API's own server (fake-dingtalk.ts): `POST /v1.0/gateway/connections/open`
// with the app key and secret answers a WebSocket endpoint and a one-time ticket; the WebSocket at
// that endpoint, opened with the ticket, carries SYSTEM frames (`ping`, which the client echoes;
// `disconnect`) and EVENT frames, each answered by an acknowledgement naming its messageId and a
// status. An event is pushed until a connection acknowledges it SUCCESS: after LATER, after no
// acknowledgement within `redeliverAfterMs`, or when the connection it went to closes first, it is
// pushed again — with a new messageId and the same eventId, as DingTalk does. Test hooks push
// events, show the acknowledgements, lose one acknowledgement with its connection, cut every
// connection, and take the gateway away and back.
import { randomBytes, randomUUID } from 'node:crypto';
import type http from 'node:http';
import type { Duplex } from 'node:stream';
import { type WebSocket, WebSocketServer } from 'ws';
import type { Answer } from './fake-oa-api.js';

export const STREAM_GATEWAY_PATH = '/v1.0/gateway/connections/open';
const STREAM_ENDPOINT_PATH = '/connect';

export interface StreamAck {
  eventId: string;
  messageId: string;
  status: string;
  at: number;
}

export interface PushedEvent {
  eventType: string;
  /** DingTalk's id of the event; a random one when not given. */
  eventId?: string;
  /** The event's own fields (sent as JSON text in `data`). */
  data: Record<string, unknown>;
}

/**
 * `one`: each push goes to one open connection, in turn (as DingTalk spreads an app's events over
 * its connections). `every`: each push goes to every open connection at once — harsher than
 * DingTalk, for tests of instances that race for one event.
 */
export type StreamDelivery = 'one' | 'every';

export interface FakeDingTalkStream {
  /** Pushes an event (now, or once a connection is open); its eventId. */
  push(event: PushedEvent): string;
  /** The acknowledgements received, of one event or all. */
  acks(eventId?: string): StreamAck[];
  /** How many times the event was pushed (redeliveries included). */
  deliveries(eventId: string): number;
  /** Events pushed and not yet acknowledged SUCCESS. */
  pending(): number;
  /** Connections open now, and opened so far. */
  openConnections(): number;
  connectionsOpened(): number;
  /** The next acknowledgement to arrive is lost: its connection is cut before it counts. */
  loseNextAck(): void;
  /** Cuts every open connection (no close frame: as a network fault would). */
  cutConnections(): void;
  /** The gateway stops answering WebSocket pings (a connection that went silent), or answers again. */
  mute(muted: boolean): void;
  /** Sends `disconnect` on every open connection, as DingTalk does before it moves a connection. */
  sendDisconnect(): void;
  /** Sends a `ping` on every open connection; resolves with how many echoed it within `withinMs`. */
  ping(withinMs: number): Promise<number>;
  /** The gateway goes away: open connections are cut; endpoint requests answer 503, upgrades are refused. */
  stop(): void;
  /** The gateway is back. */
  start(): void;
  setDelivery(delivery: StreamDelivery): void;
  /** Every ticket issued: secrets no output of the service may show. */
  issuedTickets(): string[];
  /** How many endpoint requests came, how many were refused for their credentials, and when each came. */
  endpointRequests(): { total: number; refused: number; times: number[] };
  /**
   * Pushes a CALLBACK frame of `topic` with `data` to a connection subscribed to that topic (none
   * subscribed: answered `{ answered: false }` at once), and resolves with the client's answer, or
   * with none after `withinMs`. `messageId` repeats an earlier frame's (DingTalk resending it).
   */
  pushCallback(
    topic: string,
    data: Record<string, unknown>,
    options?: { withinMs?: number; messageId?: string },
  ): Promise<CallbackAnswer>;
  /** The callback topics the connections open now subscribed to. */
  callbackTopics(): string[];
}

/** What the client answered a CALLBACK frame with: its `response`, or nothing within the time given. */
export type CallbackAnswer =
  | { answered: true; response: Record<string, unknown>; afterMs: number }
  | { answered: false };

export interface FakeStreamGateway extends FakeDingTalkStream {
  /** The answer to an endpoint request (routed here by the fake's HTTP server). */
  endpointAnswer(method: string, url: URL, body: unknown): Answer | undefined;
  close(): void;
}

interface Pending {
  event: PushedEvent & { eventId: string };
  /** messageId → the connection it was pushed on, for each delivery still unanswered. */
  deliveries: Map<string, Connection>;
  timers: Set<NodeJS.Timeout>;
}

interface Connection {
  id: string;
  socket: WebSocket;
  /** The CALLBACK topics its ticket was asked with. */
  callbackTopics: string[];
}

export function fakeStreamGateway(
  server: http.Server,
  baseUrl: () => string,
  credentials: { appKey: string; appSecret: string },
  options: { redeliverAfterMs?: number } = {},
): FakeStreamGateway {
  const redeliverAfterMs = options.redeliverAfterMs ?? 2_000;
  // Pings are answered by hand, so that a test can silence them.
  const wss = new WebSocketServer({ noServer: true, autoPong: false });
  /** Each ticket not used yet, with the CALLBACK topics its request subscribed to. */
  const tickets = new Map<string, string[]>();
  /** The CALLBACK frames awaiting their answer, by messageId. */
  const callbacksAwaited = new Map<string, (response: Record<string, unknown>) => void>();
  let callbackTurn = 0;
  const issued: string[] = [];
  const open = new Map<string, Connection>();
  const pending = new Map<string, Pending>();
  /** Every messageId sent, with its event: an acknowledgement that comes after another's SUCCESS still counts. */
  const sent = new Map<string, string>();
  const deliveryCounts = new Map<string, number>();
  const acks: StreamAck[] = [];
  const pings = new Map<string, () => void>();
  let opened = 0;
  let turn = 0;
  let away = false;
  let loseAck = false;
  let muted = false;
  let delivery: StreamDelivery = 'one';
  const requests = { total: 0, refused: 0, times: [] as number[] };

  const frame = (type: 'SYSTEM' | 'EVENT', headers: Record<string, string>, data: string) =>
    JSON.stringify({
      specVersion: '1.0',
      type,
      headers: { contentType: 'application/json', time: String(Date.now()), ...headers },
      data,
    });

  const deliver = (entry: Pending) => {
    const targets = [...open.values()];
    if (targets.length === 0) return; // pushed when a connection opens
    const chosen = delivery === 'every' ? targets : [targets[turn++ % targets.length] as Connection];
    for (const connection of chosen) {
      const messageId = randomUUID();
      entry.deliveries.set(messageId, connection);
      sent.set(messageId, entry.event.eventId);
      deliveryCounts.set(entry.event.eventId, (deliveryCounts.get(entry.event.eventId) ?? 0) + 1);
      connection.socket.send(
        frame(
          'EVENT',
          {
            appId: credentials.appKey,
            connectionId: connection.id,
            messageId,
            topic: entry.event.eventType,
            eventType: entry.event.eventType,
            eventId: entry.event.eventId,
            eventBornTime: String(Date.now()),
            eventCorpId: 'dingfakecorp',
            eventUnifiedAppId: credentials.appKey,
          },
          JSON.stringify(entry.event.data),
        ),
      );
      const timer = setTimeout(() => {
        entry.timers.delete(timer);
        if (entry.deliveries.delete(messageId)) redeliver(entry);
      }, redeliverAfterMs);
      entry.timers.add(timer);
    }
  };
  // Once none of its deliveries is still awaited, an unacknowledged event goes out again.
  const redeliver = (entry: Pending) => {
    if (pending.has(entry.event.eventId) && entry.deliveries.size === 0) deliver(entry);
  };

  const acknowledged = (connection: Connection, text: string) => {
    let answer: { headers?: { messageId?: string }; data?: string } & Record<string, unknown>;
    try {
      answer = JSON.parse(text) as typeof answer;
    } catch {
      return;
    }
    const messageId = answer.headers?.messageId;
    if (messageId && pings.has(messageId)) {
      pings.get(messageId)?.();
      return;
    }
    const awaited = messageId === undefined ? undefined : callbacksAwaited.get(messageId);
    if (awaited) {
      let response: Record<string, unknown> = {};
      try {
        const parsed = JSON.parse(answer.data ?? '{}') as { response?: unknown };
        if (parsed.response !== null && typeof parsed.response === 'object') {
          response = parsed.response as Record<string, unknown>;
        }
      } catch {
        // An answer whose data is no JSON updates nothing.
      }
      awaited(response);
      return;
    }
    const eventId = messageId === undefined ? undefined : sent.get(messageId);
    if (!eventId || !messageId) return;
    if (loseAck) {
      // The acknowledgement dies with its connection: DingTalk never saw it.
      loseAck = false;
      connection.socket.terminate();
      return;
    }
    let status = 'unknown';
    try {
      status = String((JSON.parse(answer.data ?? '{}') as { status?: unknown }).status);
    } catch {
      // An acknowledgement whose data is no JSON is no SUCCESS.
    }
    acks.push({ eventId, messageId, status, at: Date.now() });
    const entry = pending.get(eventId);
    if (!entry) return;
    entry.deliveries.delete(messageId);
    if (status === 'SUCCESS') {
      pending.delete(eventId);
      for (const timer of entry.timers) clearTimeout(timer);
      return;
    }
    // LATER (or anything but SUCCESS): DingTalk sends it again after a while.
    const timer = setTimeout(() => {
      entry.timers.delete(timer);
      redeliver(entry);
    }, redeliverAfterMs);
    entry.timers.add(timer);
  };

  const refuseUpgrade = (socket: Duplex, status: string) => {
    socket.end(`HTTP/1.1 ${status}\r\nConnection: close\r\nContent-Length: 0\r\n\r\n`);
  };

  server.on('upgrade', (request: http.IncomingMessage, socket: Duplex, head: Buffer) => {
    const url = new URL(request.url ?? '/', 'http://127.0.0.1');
    if (away) return void socket.destroy();
    if (url.pathname !== STREAM_ENDPOINT_PATH) return refuseUpgrade(socket, '404 Not Found');
    const ticket = url.searchParams.get('ticket') ?? '';
    // A ticket opens one connection.
    const callbackTopics = tickets.get(ticket);
    if (!callbackTopics || !tickets.delete(ticket)) return refuseUpgrade(socket, '401 Unauthorized');
    wss.handleUpgrade(request, socket, head, (ws) => {
      const connection: Connection = { id: randomUUID(), socket: ws, callbackTopics };
      open.set(connection.id, connection);
      opened += 1;
      ws.on('message', (raw: Buffer) => acknowledged(connection, raw.toString('utf8')));
      ws.on('ping', (data: Buffer) => {
        if (!muted) ws.pong(data);
      });
      ws.on('close', () => {
        open.delete(connection.id);
        // Whatever went out on it unanswered goes out again.
        for (const entry of pending.values()) {
          for (const [messageId, target] of entry.deliveries) {
            if (target === connection) entry.deliveries.delete(messageId);
          }
          redeliver(entry);
        }
      });
      for (const entry of pending.values()) if (entry.deliveries.size === 0) deliver(entry);
    });
  });

  return {
    endpointAnswer(method, url, body) {
      if (method !== 'POST' || url.pathname !== STREAM_GATEWAY_PATH) return undefined;
      requests.total += 1;
      requests.times.push(Date.now());
      if (away) return { status: 503, body: { code: 'ServiceUnavailable', message: 'gateway away' } };
      const given = body as { clientId?: unknown; clientSecret?: unknown; subscriptions?: unknown } | undefined;
      if (given?.clientId !== credentials.appKey || given.clientSecret !== credentials.appSecret) {
        requests.refused += 1;
        return { status: 401, body: { code: 'InvalidAuthentication', message: 'clientId or clientSecret is wrong' } };
      }
      if (!Array.isArray(given.subscriptions) || given.subscriptions.length === 0) {
        return { status: 400, body: { code: 'InvalidSubscriptions', message: 'no subscriptions' } };
      }
      const ticket = randomBytes(18).toString('base64url');
      const subscribed = (given.subscriptions as { type?: unknown; topic?: unknown }[])
        .filter((entry) => entry.type === 'CALLBACK' && typeof entry.topic === 'string')
        .map((entry) => entry.topic as string);
      tickets.set(ticket, subscribed);
      issued.push(ticket);
      return { status: 200, body: { endpoint: `${baseUrl().replace(/^http/, 'ws')}${STREAM_ENDPOINT_PATH}`, ticket } };
    },
    push(event) {
      const eventId = event.eventId ?? randomBytes(16).toString('hex');
      const entry: Pending = { event: { ...event, eventId }, deliveries: new Map(), timers: new Set() };
      pending.set(eventId, entry);
      deliver(entry);
      return eventId;
    },
    acks: (eventId) => acks.filter((ack) => eventId === undefined || ack.eventId === eventId),
    deliveries: (eventId) => deliveryCounts.get(eventId) ?? 0,
    pending: () => pending.size,
    openConnections: () => open.size,
    connectionsOpened: () => opened,
    loseNextAck: () => void (loseAck = true),
    mute: (silent) => void (muted = silent),
    cutConnections: () => {
      for (const connection of open.values()) connection.socket.terminate();
    },
    sendDisconnect: () => {
      for (const connection of open.values()) {
        connection.socket.send(
          frame('SYSTEM', { messageId: randomUUID(), topic: 'disconnect' }, '{"reason":"moving"}'),
        );
      }
    },
    ping: async (withinMs) => {
      const answered = await Promise.all(
        [...open.values()].map(
          (connection) =>
            new Promise<boolean>((resolve) => {
              const messageId = randomUUID();
              const timer = setTimeout(() => {
                pings.delete(messageId);
                resolve(false);
              }, withinMs);
              pings.set(messageId, () => {
                clearTimeout(timer);
                pings.delete(messageId);
                resolve(true);
              });
              connection.socket.send(
                frame('SYSTEM', { messageId, topic: 'ping' }, JSON.stringify({ opaque: messageId })),
              );
            }),
        ),
      );
      return answered.filter(Boolean).length;
    },
    stop: () => {
      away = true;
      for (const connection of open.values()) connection.socket.terminate();
    },
    start: () => void (away = false),
    setDelivery: (next) => void (delivery = next),
    issuedTickets: () => [...issued],
    endpointRequests: () => ({ ...requests, times: [...requests.times] }),
    callbackTopics: () => [...new Set([...open.values()].flatMap((connection) => connection.callbackTopics))],
    pushCallback: (topic, data, options = {}) => {
      const targets = [...open.values()].filter((connection) => connection.callbackTopics.includes(topic));
      const target = targets[callbackTurn++ % Math.max(1, targets.length)];
      if (!target) return Promise.resolve({ answered: false });
      const messageId = options.messageId ?? randomUUID();
      const sentAt = Date.now();
      return new Promise<CallbackAnswer>((resolve) => {
        const timer = setTimeout(() => {
          callbacksAwaited.delete(messageId);
          resolve({ answered: false });
        }, options.withinMs ?? 10_000);
        callbacksAwaited.set(messageId, (response) => {
          clearTimeout(timer);
          callbacksAwaited.delete(messageId);
          resolve({ answered: true, response, afterMs: Date.now() - sentAt });
        });
        target.socket.send(
          JSON.stringify({
            specVersion: '1.0',
            type: 'CALLBACK',
            headers: {
              appId: credentials.appKey,
              connectionId: target.id,
              contentType: 'application/json',
              messageId,
              time: String(Date.now()),
              topic,
            },
            data: JSON.stringify(data),
          }),
        );
      });
    },
    close: () => {
      away = true;
      for (const entry of pending.values()) for (const timer of entry.timers) clearTimeout(timer);
      for (const connection of open.values()) connection.socket.terminate();
      wss.close();
    },
  };
}

// The DingTalk Stream connection (DINGTALK_EVENT_MODE=stream): the service opens a WebSocket to
// DingTalk instead of DingTalk calling a public URL. Each connection is opened in two steps, as the
// protocol says: `POST /v1.0/gateway/connections/open` on DINGTALK_API_BASE_URL with the app key
// and secret answers an endpoint and a one-time ticket, then the WebSocket to the endpoint with
// the ticket. DingTalk then pushes EVENT frames; each is handed to `onEvent`, and its
// acknowledgement is sent only with the status `onEvent` resolves to — SUCCESS once the event is
// taken, LATER when it was not, so that DingTalk sends it again (as it does with an event whose
// acknowledgement never came). A lost connection is opened again after a jittered, growing pause;
// a `disconnect` frame (DingTalk moving the connection) is answered by opening a new one as soon as
// the old one has closed (its events in hand acknowledged, 2 s at most), without a pause unless
// the moved connection had been up for less than a heartbeat. The CALLBACK topics it is given (a
// decision card's clicks) are subscribed to as well, each callback answered with its handler's
// response.
// The app secret, the ticket and the URL that carries it are never logged.
//
// Why not the `DWClient` of the `dingtalk-stream` package: it acknowledges every event before
// its handler's work can finish (the handler is synchronous), reconnects after a fixed second
// with no backoff — twice at once after a socket error, so connections multiply while DingTalk is
// away —, says nothing of its state, prints the secret and the ticket with `debug` on, and
// discovers on a constant URL. A subclass would override every method but the frame switch; the
// package's types and the gateway's path are used here instead.
import type { Logger } from 'pino';
import WebSocket from 'ws';
import { GATEWAY_URL } from 'dingtalk-stream/constants';
import { jitteredBackoffMs } from '../../domain/backoff.js';
import { redactUrl, scrubbed } from '../../domain-node/redact-url.js';
import type { ConnectionState } from '../../services/health/event-connections.js';
import { callbackAnswer, eventAck, parseDownstreamFrame, pingEcho, type StreamAckStatus } from './stream-frames.js';

/** One EVENT frame as it arrived. */
export interface StreamEvent {
  eventType: string | undefined;
  /** DingTalk's id of the event (`headers.eventId`), the same on every redelivery. */
  eventId: string | undefined;
  /** The event's own fields, as JSON text. */
  data: string;
  /** When the frame was read, in epoch milliseconds: the deadline of its acknowledgement counts from it. */
  receivedAt: number;
}

/** One CALLBACK frame of a subscribed topic, as it arrived. */
export interface StreamCallback {
  topic: string;
  /** The frame's id, the one its answer carries. */
  messageId: string;
  /** The callback's fields, as JSON text. */
  data: string;
  /** When the frame was read, in epoch milliseconds: the deadline of its answer counts from it. */
  receivedAt: number;
}

export interface StreamTimings {
  /** The pause before the first reconnection; it doubles up to `maxRetryMs`, half of it random. */
  firstRetryMs: number;
  maxRetryMs: number;
  /** A WebSocket ping this often; a connection that answered nothing since the last one is given up. */
  heartbeatMs: number;
  /** The endpoint request, and separately the WebSocket's opening handshake. */
  requestTimeoutMs: number;
}

export const STREAM_TIMINGS: StreamTimings = {
  firstRetryMs: 500,
  maxRetryMs: 30_000,
  heartbeatMs: 10_000,
  requestTimeoutMs: 5_000,
};

export interface DingTalkStreamOptions {
  /** The app's AppKey (its ClientID) and AppSecret (its ClientSecret). */
  appKey: string;
  appSecret: string;
  /** DINGTALK_API_BASE_URL: where the endpoint is asked for. */
  apiBaseUrl: string;
  /** Takes one event; resolves to the acknowledgement to send. A rejection is answered LATER. */
  onEvent: (event: StreamEvent) => Promise<StreamAckStatus>;
  /**
   * The callback topics subscribed to, and what takes each callback: it resolves to the response
   * DingTalk acts on (a card's update). A rejection is answered with an empty response. None: no
   * callback is subscribed to.
   */
  callbacks?:
    | {
        topics: readonly string[];
        onCallback: (callback: StreamCallback) => Promise<unknown>;
        /** The response to a callback that arrives while the connection closes: it is not taken. */
        whileClosing: unknown;
        /** The response when `onCallback` fails. */
        onFailure: unknown;
      }
    | undefined;
  /** Each change of the connection's state (services/health/event-connections.ts). */
  onState: (state: ConnectionState) => void;
  log: Pick<Logger, 'info' | 'warn' | 'error'>;
  timings?: Partial<StreamTimings>;
}

export interface DingTalkStream {
  /**
   * Takes no new event (DingTalk sends those again, to another connection of the app), lets those
   * in hand be acknowledged for at most `withinMs`, then closes the connection.
   */
  stop(withinMs: number): Promise<void>;
}

/** The gateway's path, as DingTalk's own client has it; the host is DINGTALK_API_BASE_URL's. */
const GATEWAY_PATH = new URL(GATEWAY_URL).pathname;
/** DingTalk's events are small JSON texts: a frame beyond this is no frame of theirs. */
const MAX_FRAME_BYTES = 1024 * 1024;
const USER_AGENT = 'exactly-once-orders';

/** A failure to connect whose reason may be logged as it is. */
export class StreamConnectFailure extends Error {}

export function openDingTalkStream(options: DingTalkStreamOptions): DingTalkStream {
  const timings = { ...STREAM_TIMINGS, ...options.timings };
  const { log } = options;
  const stopping = new AbortController();
  let current: Connection | undefined;
  let state: ConnectionState | undefined;
  const report = (next: ConnectionState) => {
    if (next === state) return;
    state = next;
    options.onState(next);
  };

  const run = async () => {
    let failures = 0;
    while (!stopping.signal.aborted) {
      report('connecting');
      let pause: number;
      try {
        const target = await endpoint(options, timings, stopping.signal);
        if (stopping.signal.aborted) break;
        const connection = new Connection(target, options, timings, () => report('up'));
        current = connection;
        const ended = await connection.served;
        current = undefined;
        if (stopping.signal.aborted) break;
        if (ended.kind === 'moved' && ended.upForMs >= timings.heartbeatMs) {
          failures = 0;
          log.info('DingTalk Stream: DingTalk moves the connection; opening a new one');
          continue;
        }
        // A connection that is lost as soon as it opened counts as a failure: no quick loop.
        failures = ended.upForMs >= timings.heartbeatMs ? 1 : failures + 1;
        pause = jitteredBackoffMs(failures, backoff(timings));
        log.warn({ closeCode: ended.code, retryInMs: pause }, 'DingTalk Stream connection lost; opening a new one');
      } catch (error) {
        current = undefined;
        if (stopping.signal.aborted) break;
        failures += 1;
        report('down');
        pause = jitteredBackoffMs(failures, backoff(timings));
        log.warn(
          { reason: error instanceof StreamConnectFailure ? error.message : 'unexpected failure', retryInMs: pause },
          'DingTalk Stream could not connect',
        );
      }
      await pauseFor(pause, stopping.signal);
    }
    report('down');
  };
  const running = run().catch((error: unknown) => {
    // Not expected: every failure above is caught. Said once; the callback door is unaffected.
    log.error({ reason: (error as Error).name }, 'DingTalk Stream stopped for good');
    report('down');
  });

  return {
    async stop(withinMs) {
      stopping.abort();
      await current?.close(withinMs);
      await running;
      log.info('DingTalk Stream closed');
    },
  };
}

const backoff = (timings: StreamTimings) => ({
  initialIntervalMs: timings.firstRetryMs,
  backoffCoefficient: 2,
  maximumIntervalMs: timings.maxRetryMs,
});

const pauseFor = (ms: number, signal: AbortSignal) =>
  new Promise<void>((resolve) => {
    if (signal.aborted) return resolve();
    const timer = setTimeout(done, ms);
    function done() {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    }
    signal.addEventListener('abort', done);
  });

export interface StreamTarget {
  /** The endpoint as DingTalk named it, for the log. */
  endpoint: string;
  /** The endpoint with the ticket: never logged. */
  url: string;
  ticket: string;
}

/** Asks the gateway for an endpoint and a ticket (the request carries the app secret: never logged). */
async function endpoint(
  options: DingTalkStreamOptions,
  timings: StreamTimings,
  stop: AbortSignal,
): Promise<StreamTarget> {
  let response: Response;
  try {
    response = await fetch(new URL(GATEWAY_PATH, options.apiBaseUrl), {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json' },
      body: JSON.stringify({
        clientId: options.appKey,
        clientSecret: options.appSecret,
        // Every event the app subscribes to in the console, and the callback topics taken here.
        subscriptions: [
          { type: 'EVENT', topic: '*' },
          ...(options.callbacks?.topics ?? []).map((topic) => ({ type: 'CALLBACK', topic })),
        ],
        ua: USER_AGENT,
      }),
      signal: AbortSignal.any([AbortSignal.timeout(timings.requestTimeoutMs), stop]),
    });
  } catch (error) {
    const cause = (error as { cause?: { code?: unknown } }).cause?.code;
    throw new StreamConnectFailure(
      `the endpoint request failed (${typeof cause === 'string' ? cause : (error as Error).name})`,
    );
  }
  let body: Record<string, unknown> = {};
  try {
    const parsed: unknown = await response.json();
    if (parsed !== null && typeof parsed === 'object') body = parsed as Record<string, unknown>;
  } catch {
    // Judged below by its status and fields.
  }
  if (!response.ok) {
    // DingTalk's error code is a word (`invalidClientId`); its message is not repeated.
    const code = typeof body.code === 'string' && /^[A-Za-z0-9._-]{1,64}$/.test(body.code) ? `, ${body.code}` : '';
    throw new StreamConnectFailure(`the endpoint request was answered HTTP ${response.status}${code}`);
  }
  return streamTargetOf(body, options.apiBaseUrl);
}

/**
 * The WebSocket an endpoint answer names, with its ticket; a StreamConnectFailure saying why when
 * it names none to open. An endpoint discovered over https:// is opened over wss:// or not at all:
 * the ticket and every event would otherwise cross in clear, and a `ws://` in an answer over TLS is
 * no endpoint of DingTalk's. Production takes DINGTALK_API_BASE_URL over https:// alone
 * (services/config/production-refusals.ts), so there the Stream is wss:// whatever is answered.
 */
export function streamTargetOf(body: Record<string, unknown>, apiBaseUrl: string): StreamTarget {
  const { endpoint: named, ticket } = body;
  if (typeof named !== 'string' || typeof ticket !== 'string' || ticket === '') {
    throw new StreamConnectFailure('the endpoint answer names no endpoint or no ticket');
  }
  let url: URL;
  try {
    url = new URL(named);
  } catch {
    throw new StreamConnectFailure('the endpoint answer names no URL');
  }
  if (url.protocol !== 'wss:' && url.protocol !== 'ws:') {
    throw new StreamConnectFailure(`the endpoint answer names a ${url.protocol}// URL, not a WebSocket`);
  }
  if (url.protocol === 'ws:' && new URL(apiBaseUrl).protocol === 'https:') {
    throw new StreamConnectFailure(
      'the endpoint answer names a ws:// URL; discovered over https:// (DINGTALK_API_BASE_URL), the Stream opens wss:// only',
    );
  }
  url.searchParams.set('ticket', ticket);
  return { endpoint: named, url: url.toString(), ticket };
}

type Ending = { kind: 'lost' | 'moved'; code: number; upForMs: number };

/** One WebSocket: opened, served until it ends, and closed only once its events are acknowledged. */
class Connection {
  /** Resolves when the connection has ended; rejects when it never opened. */
  readonly served: Promise<Ending>;
  private readonly socket: WebSocket;
  private readonly inHand = new Set<Promise<void>>();
  /** No new event is taken: the process stops, or DingTalk moves the connection. */
  private leaving = false;
  private moved = false;

  constructor(
    target: StreamTarget,
    private readonly options: DingTalkStreamOptions,
    timings: StreamTimings,
    opened: () => void,
  ) {
    const { log } = options;
    this.socket = new WebSocket(target.url, {
      handshakeTimeout: timings.requestTimeoutMs,
      maxPayload: MAX_FRAME_BYTES,
      followRedirects: false,
    });
    let alive = true;
    let heartbeat: NodeJS.Timeout | undefined;
    this.served = new Promise<Ending>((resolve, reject) => {
      let openedAt: number | undefined;
      this.socket.on('open', () => {
        openedAt = Date.now();
        alive = true;
        opened();
        log.info({ endpoint: redactUrl(target.endpoint) }, 'DingTalk Stream connected');
        heartbeat = setInterval(() => {
          if (!alive) {
            log.warn('DingTalk Stream: no answer to the last ping; giving the connection up');
            this.socket.terminate();
            return;
          }
          alive = false;
          this.socket.ping();
        }, timings.heartbeatMs);
      });
      this.socket.on('pong', () => (alive = true));
      this.socket.on('message', (raw, isBinary) => {
        alive = true;
        if (!isBinary) this.take(rawText(raw));
      });
      this.socket.on('error', (error) => {
        // The ticket is in the URL; a message that repeats the URL must not carry it on.
        log.warn({ reason: scrubbed(error.message, [target.ticket]) }, 'DingTalk Stream socket error');
      });
      this.socket.on('close', (code) => {
        clearInterval(heartbeat);
        if (openedAt === undefined) reject(new StreamConnectFailure(`the WebSocket did not open (close code ${code})`));
        else resolve({ kind: this.moved ? 'moved' : 'lost', code, upForMs: Date.now() - openedAt });
      });
    });
    // The run loop awaits `served`; a rejection it handles is not left unhandled meanwhile.
    this.served.catch(() => undefined);
  }

  /** Stops taking events, lets those in hand finish for at most `withinMs`, then closes. */
  async close(withinMs: number): Promise<void> {
    this.leaving = true;
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([
      Promise.allSettled([...this.inHand]),
      new Promise((resolve) => (timer = setTimeout(resolve, withinMs))),
    ]);
    clearTimeout(timer);
    if (this.socket.readyState === WebSocket.CONNECTING) this.socket.terminate();
    else this.socket.close(1000, 'closing');
    await this.served.catch(() => undefined);
  }

  private take(text: string) {
    const { log } = this.options;
    const frame = parseDownstreamFrame(text);
    switch (frame.type) {
      case 'SYSTEM':
        if (frame.topic === 'ping') this.send(pingEcho(frame));
        else if (frame.topic === 'disconnect') {
          // DingTalk closes this connection soon: open another, and close this one once the
          // events in hand are acknowledged (an event not taken here comes again on the new one).
          this.moved = true;
          void this.close(2_000);
        }
        return;
      case 'EVENT': {
        if (this.leaving) return;
        const event: StreamEvent = {
          eventType: frame.eventType,
          eventId: frame.eventId,
          data: frame.data,
          receivedAt: Date.now(),
        };
        const handled = this.options
          .onEvent(event)
          .catch((): StreamAckStatus => 'LATER')
          .then((status) => {
            if (!this.send(eventAck(frame.messageId, status))) {
              log.warn(
                { eventId: frame.eventId, status },
                'DingTalk Stream: acknowledgement not sent, the connection closed; DingTalk sends the event again',
              );
            }
          });
        this.inHand.add(handled);
        void handled.finally(() => this.inHand.delete(handled));
        return;
      }
      case 'CALLBACK': {
        const callbacks = this.options.callbacks;
        if (!callbacks?.topics.includes(frame.topic)) {
          // Not subscribed to; answered so that DingTalk does not wait on it.
          log.warn({ topic: frame.topic.slice(0, 128) }, 'DingTalk Stream: a callback frame nobody subscribed to');
          this.send(callbackAnswer(frame.messageId, {}));
          return;
        }
        if (this.leaving) {
          // Not taken while closing (DingTalk sends no callback again): said so, to click again.
          log.warn(
            { topic: frame.topic },
            'DingTalk Stream: a callback while the connection closes, answered not taken',
          );
          this.send(callbackAnswer(frame.messageId, callbacks.whileClosing));
          return;
        }
        const callback: StreamCallback = {
          topic: frame.topic,
          messageId: frame.messageId,
          data: frame.data,
          receivedAt: Date.now(),
        };
        const answered = Promise.resolve()
          .then(() => callbacks.onCallback(callback))
          .catch((error: unknown) => {
            log.warn({ topic: frame.topic, reason: (error as Error).name }, 'DingTalk Stream: a callback not taken');
            return callbacks.onFailure;
          })
          .then((response) => {
            if (!this.send(callbackAnswer(frame.messageId, response))) {
              log.warn({ topic: frame.topic }, 'DingTalk Stream: a callback not answered, its connection closed');
            }
          });
        this.inHand.add(answered);
        void answered.finally(() => this.inHand.delete(answered));
        return;
      }
      case 'invalid':
        log.warn({ reason: frame.reason }, 'DingTalk Stream: a frame that is not of the protocol, ignored');
        return;
    }
  }

  /** False when the connection is no longer open. */
  private send(text: string): boolean {
    if (this.socket.readyState !== WebSocket.OPEN) return false;
    this.socket.send(text);
    return true;
  }
}

function rawText(raw: WebSocket.RawData): string {
  if (Array.isArray(raw)) return Buffer.concat(raw).toString('utf8');
  return Buffer.isBuffer(raw) ? raw.toString('utf8') : Buffer.from(raw).toString('utf8');
}

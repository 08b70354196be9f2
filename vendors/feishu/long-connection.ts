// Feishu's long connection (FEISHU_EVENT_MODE=long-connection): the service opens the WebSocket
// itself, through the official SDK's WSClient, so Feishu pushes approval events to an instance
// without a public URL (docs/architecture.md, decision 35). WSClient discovers the endpoint
// (`POST {FEISHU_API_BASE_URL}/callback/ws/endpoint` with the app id and secret), keeps the socket
// alive with pings, reconnects as the endpoint's client config says, and acknowledges each event
// frame once the handler's promise settles: `{code: 200}` when it resolves, `{code: 500}` when it
// throws, and Feishu sends an event again when the ack is not 200 within 3 s or never comes.
//
// So the handler resolves only once the event is taken — its key claimed, or the event recorded,
// or judged not an order — and throws otherwise; a process that dies before the ack sends none. A
// click on a decision card (`card.action.trigger`) is answered in its ack: the toast and the card
// locked, as the callback answers it in its body.
// Every event is read by feishu-event.ts, as the callback's is. Authentication is the
// connection's: Feishu checks the app secret when the endpoint is discovered and pushes plaintext
// events over TLS afterwards, so no signature or token is checked per event.
//
// Nothing the SDK logs reaches the log unfiltered: the endpoint's URL carries a ticket that opens a
// connection for this app, and the app secret is a credential; both are cut out of every line.
import { AESCipher, EventDispatcher, LoggerLevel, WSClient } from '@larksuiteoapi/node-sdk';
import type { Logger } from 'pino';
import { jitteredBackoffMs } from '../../domain/backoff.js';
import { redactUrl, scrubbed } from '../../domain-node/redact-url.js';
import type { EventConnections } from '../../services/health/event-connections.js';
import { type ApprovalEventOutcome, settledWithin } from '../../submission/accept-oa-event.js';
import type { CardClickReply } from '../../domain/decision-cards.js';
import type { CardClickEvent, OaEvent } from '../connector.js';
import { feishuClickReply } from './decision-cards.js';
import { readFeishuEvent } from './event.js';
import { jsonObjectOf, objectOf } from '../inbound.js';

type ConnectionLog = Pick<Logger, 'trace' | 'debug' | 'info' | 'warn' | 'error'>;

export interface FeishuLongConnectionOptions {
  appId: string;
  appSecret: string;
  /** FEISHU_API_BASE_URL: the open API, where the connection's endpoint is discovered. */
  domain: string;
  /** The callback's Encrypt Key when the callback is on too: an event that arrives encrypted is decrypted with it. */
  encryptKey: string | undefined;
  /** The callback's token, when it is set: an event's envelope may carry it, so the log never shows it. */
  verificationToken?: string | undefined;
  log: ConnectionLog;
  connections: Pick<EventConnections, 'report'>;
  /**
   * Takes one approval event that arrived at `arrivedAt`; resolves once it may be acknowledged,
   * throws when Feishu must send it again.
   */
  take(event: OaEvent, arrivedAt: number): Promise<ApprovalEventOutcome>;
  /**
   * Takes a click on a decision card that arrived at `arrivedAt`; resolves with its answer, which
   * goes back in the frame's acknowledgement. Undefined: no decision cards, a click is not taken.
   */
  click?(click: CardClickEvent, arrivedAt: number): Promise<CardClickReply>;
}

export interface FeishuLongConnection {
  /**
   * Takes no new event (each is answered with a failure, so Feishu sends it again, to another
   * instance), lets those being taken finish for at most `withinMs`, then closes the socket.
   */
  close(withinMs: number): Promise<void>;
}

/** When WSClient gives up (a refused endpoint discovery, retries exhausted), it is started again after this backoff. */
const RESTART_BACKOFF = { initialIntervalMs: 1_000, backoffCoefficient: 2, maximumIntervalMs: 60_000 };
/** A handshake stuck on a proxy or a NAT path is abandoned and retried after this long. */
const HANDSHAKE_TIMEOUT_MS = 10_000;
/** A connection that answers no ping within this long is taken as lost (seconds, as WSClient counts). */
const PING_TIMEOUT_SECONDS = 15;

export function openFeishuLongConnection(options: FeishuLongConnectionOptions): FeishuLongConnection {
  const { log, connections } = options;
  const cipher = options.encryptKey ? new AESCipher(options.encryptKey) : undefined;
  // The SDK logs what it receives: an event's envelope may carry the callback's token.
  const secrets = [options.appSecret, options.encryptKey, options.verificationToken].filter(
    (secret): secret is string => secret !== undefined && secret.length > 0,
  );
  const sdkLog = filteredSdkLogger(log, secrets);
  const inFlight = new Set<Promise<unknown>>();
  let closing = false;
  let failures = 0;
  let restart: NodeJS.Timeout | undefined;

  const up = () => {
    failures = 0;
    connections.report('feishu', 'up');
    log.info({ vendor: 'feishu' }, 'Feishu long connection up');
  };
  const client = new WSClient({
    appId: options.appId,
    appSecret: options.appSecret,
    domain: options.domain,
    logger: sdkLog,
    loggerLevel: LoggerLevel.trace,
    autoReconnect: true,
    handshakeTimeoutMs: HANDSHAKE_TIMEOUT_MS,
    wsConfig: { pingTimeout: PING_TIMEOUT_SECONDS },
    onReady: up,
    onReconnected: up,
    onReconnecting: () => {
      connections.report('feishu', 'connecting');
      log.warn({ vendor: 'feishu' }, 'Feishu long connection lost: reconnecting');
    },
    // WSClient stops for good on an endpoint discovery it may not retry (a refused app secret, a
    // busy answer) or once its reconnects are spent; it is started again here, with backoff.
    onError: (error) => {
      connections.report('feishu', 'down');
      if (closing) return;
      failures += 1;
      const delayMs = jitteredBackoffMs(failures, RESTART_BACKOFF);
      log.error(
        { vendor: 'feishu', reason: scrubbed(error.message, secrets), restartInMs: delayMs },
        'Feishu long connection failed: starting it again',
      );
      restart = setTimeout(() => {
        if (closing) return;
        connections.report('feishu', 'connecting');
        startClient();
      }, delayMs);
    },
  });

  const handle = async (data: unknown): Promise<unknown> => {
    const arrivedAt = Date.now();
    // Failing is how a frame asks Feishu to send it again: WSClient acks it with code 500.
    if (closing) throw new Error('this instance is closing its Feishu long connection; Feishu sends the event again');
    const payload = plainPayload(data, cipher);
    if (typeof payload === 'string') {
      log.error({ vendor: 'feishu', reason: payload }, 'Feishu event not taken: Feishu sends it again');
      throw new Error(payload);
    }
    const read = readFeishuEvent(payload);
    if (read.kind === 'card-click') {
      const { click } = read;
      if (!options.click) {
        log.warn(
          { vendor: 'feishu', eventId: click.eventId },
          'Feishu card click acknowledged: no decision cards here',
        );
        return feishuClickReply(click.idempotencyKey, { tone: 'error', text: 'Decision cards are off for this app' })
          .body;
      }
      // The answer — the toast and the card locked — goes back as the acknowledgement's data, as a
      // callback's answer does in its body; Feishu shows it to the clicker.
      const taking = options.click(click, arrivedAt);
      inFlight.add(taking);
      try {
        const answer = await taking;
        return feishuClickReply(click.idempotencyKey, answer).body;
      } finally {
        inFlight.delete(taking);
      }
    }
    if (read.kind === 'other') {
      log.info({ vendor: 'feishu', eventType: read.eventType }, 'Feishu event acknowledged: not an approval event');
      return undefined;
    }
    if (read.kind === 'unusable') {
      log.warn({ vendor: 'feishu', reason: read.reason }, 'Feishu event acknowledged: unusable, nothing recorded');
      return undefined;
    }
    const taking = options.take(read.event, arrivedAt);
    inFlight.add(taking);
    try {
      const outcome = await taking;
      log.info(
        {
          vendor: 'feishu',
          eventId: read.event.eventId,
          idempotencyKey: outcome.idempotencyKey,
          outcome: outcome.kind,
        },
        'Feishu approval event acknowledged over the long connection',
      );
      return undefined;
    } catch (error) {
      log.warn(
        { vendor: 'feishu', eventId: read.event.eventId, err: error },
        'Feishu approval event not taken: not acknowledged, Feishu sends it again',
      );
      throw error;
    } finally {
      inFlight.delete(taking);
    }
  };
  const dispatcher = new FrameDispatcher(handle, sdkLog);

  // A start that throws is a connection that is down: said, and tried again as after onError.
  function startClient(): void {
    client.start({ eventDispatcher: dispatcher }).catch((error: unknown) => {
      connections.report('feishu', 'down');
      log.error(
        { vendor: 'feishu', reason: scrubbed(error instanceof Error ? error.message : String(error), secrets) },
        'Feishu long connection could not start',
      );
    });
  }

  connections.report('feishu', 'connecting');
  log.info({ vendor: 'feishu', domain: redactUrl(options.domain) }, 'Feishu long connection opening');
  startClient();

  return {
    close: async (withinMs) => {
      closing = true;
      clearTimeout(restart);
      await settledWithin(inFlight, withinMs);
      client.close();
      connections.report('feishu', 'down');
      log.info({ vendor: 'feishu' }, 'Feishu long connection closed');
    },
  };
}

/**
 * The dispatcher WSClient hands each event frame's JSON to. Its own `invoke` flattens the envelope
 * and dispatches by type; this one hands the body as Feishu sent it to `handle`, which both doors'
 * reader reads. WSClient acks `{code: 200}` with what `handle` resolves to, JSON in base64, as the
 * ack's `data` (a card click's answer; nothing for an event): its `handleEventData` does so in the
 * SDK version package-lock.json pins (1.74.0).
 */
class FrameDispatcher extends EventDispatcher {
  constructor(
    private readonly handle: (data: unknown) => Promise<unknown>,
    logger: ReturnType<typeof filteredSdkLogger>,
  ) {
    super({ logger, loggerLevel: LoggerLevel.trace });
  }

  override async invoke(data: unknown): Promise<unknown> {
    return this.handle(data);
  }
}

/** The event body in plaintext, or why there is none. */
function plainPayload(data: unknown, cipher: AESCipher | undefined): Record<string, unknown> | string {
  const payload = objectOf(data);
  if (!payload) return 'the frame is not a JSON object';
  if (typeof payload.encrypt !== 'string') return payload;
  // Feishu pushes plaintext over the connection; an encrypted body is read as the callback's is.
  if (!cipher) return 'the event arrived encrypted and FEISHU_ENCRYPT_KEY is not set';
  try {
    return jsonObjectOf(cipher.decrypt(payload.encrypt)) ?? 'the decrypted event is not a JSON object';
  } catch {
    return 'the event does not decrypt with FEISHU_ENCRYPT_KEY';
  }
}

/**
 * The logger WSClient and its dispatcher write to. The SDK hands each call its arguments as one
 * array; they become one line, scrubbed. Its error lines are the attempts of a reconnect it makes
 * on its own, so they are warnings here (what is an error — a connection given up — is logged by
 * the connection itself), and its info lines (banners, "reconnect") are debug.
 */
export function filteredSdkLogger(log: ConnectionLog, secrets: readonly string[]) {
  const line = (parts: unknown): string =>
    scrubbed((Array.isArray(parts) ? parts : [parts]).map(textOfPart).join(' '), secrets);
  const to = (level: keyof ConnectionLog) => (parts: unknown) =>
    log[level]({ vendor: 'feishu', source: '@larksuiteoapi/node-sdk' }, line(parts));
  return { error: to('warn'), warn: to('warn'), info: to('debug'), debug: to('debug'), trace: to('trace') };
}

function textOfPart(part: unknown): string {
  if (typeof part === 'string') return part;
  if (part instanceof Error) return part.message;
  try {
    return JSON.stringify(part) ?? String(part);
  } catch {
    return String(part);
  }
}

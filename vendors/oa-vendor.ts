// What an OA vendor gives the service, in one shape for every vendor (docs/connectors.md, "A
// vendor's folder"): its settings, the connector that reads its callbacks, the connection the API
// holds open when the vendor pushes events over one, and the reader the worker reads approvals
// with. vendors/registry.ts lists the vendors; nothing else branches on which one it is.
import type { Logger } from 'pino';
import type { ZodRawShape } from 'zod';
import type { OaVendor } from '../domain/oa-approval.js';
import type { ConnectionState } from '../services/health/event-connections.js';
import type { ApprovalEventOutcome } from '../submission/accept-oa-event.js';
import type { ApprovalReader } from './approval-reader.js';
import type { ApprovalReceiptPoster } from './approval-receipts.js';
import type { CardClickReply } from '../domain/decision-cards.js';
import type { CardClickEvent, Connector, OaEvent } from './connector.js';
import type { DecisionCardSender } from './decision-cards.js';
import type { Clock } from './inbound.js';
import type { VendorSettings } from './vendor-settings.js';

/** What every callback connector is built with. */
export interface CallbackDoor {
  /** WEBHOOK_TOLERANCE_SECONDS: how far a signed timestamp may be from `now`. */
  toleranceSeconds: number;
  now: Clock;
}

/** Where a held connection hands what it receives. */
export interface ConnectionSink {
  /**
   * Takes one approval event that arrived at `arrivedAt`, through the callbacks' path; resolves once
   * it may be acknowledged, rejects when the vendor must send it again.
   */
  take(event: OaEvent, arrivedAt: number): Promise<ApprovalEventOutcome>;
  /**
   * Takes a click on a decision card that arrived at `arrivedAt` as the callbacks' door does, for
   * the people on `operators`; resolves with the answer due inside the vendor's deadline.
   */
  click(click: CardClickEvent, operators: ReadonlySet<string>, arrivedAt: number): Promise<CardClickReply>;
  /** Each change of the connection's state (/healthz, `orders_oa_connection_up`). */
  report(state: ConnectionState): void;
  log: Logger;
}

/** A connection to the vendor that the API process opens and holds, over which events arrive. */
export interface HeldConnection {
  /**
   * How long the vendor waits for an event's acknowledgement before it sends the event again;
   * undefined when it does not say (the start's own deadline, WEBHOOK_START_TIMEOUT_MS, applies).
   */
  readonly ackDeadlineMs: number | undefined;
  /** How long the vendor waits for a card click's answer, when that is not `ackDeadlineMs`. */
  readonly clickDeadlineMs?: number | undefined;
  /** Opens the connection, and keeps it open (reconnecting) until `stop`. */
  start(sink: ConnectionSink): void;
  /** Takes no new event, lets those being taken finish for at most `withinMs`, then closes. */
  stop(withinMs: number): Promise<void>;
  /** Where it stands now; undefined before `start`. */
  state(): ConnectionState | undefined;
}

/** One OA vendor. `Settings` is its part of the connectors' configuration (vendors/<vendor>/settings.ts). */
export interface OaVendorModule<Settings> {
  readonly vendor: OaVendor;
  /** How its callback arrives: the methods it is called with (WeCom checks its URL with a GET) and the body's form. */
  readonly callback: { readonly methods: readonly ('GET' | 'POST')[]; readonly body: 'json' | 'xml' };
  /**
   * Its settings (vendors/vendor-settings.ts): the variables it reads, which of them are secrets and
   * open-API addresses, and its configuration; vendors/settings.ts composes them.
   */
  readonly settings: VendorSettings<ZodRawShape, Settings>;
  /** The connector of its callback; undefined when its callback is off. */
  connector?(settings: Settings, door: CallbackDoor): Connector | undefined;
  /** The connection that brings its events; undefined when its settings choose the callback alone. */
  connection?(settings: Settings): HeldConnection | undefined;
  /** Reads an approval instance from the vendor's open API; each request within `timeoutMs`. */
  reader(settings: Settings, options: { timeoutMs: number }): ApprovalReader;
  /**
   * Posts and refreshes decision cards in the vendor's chat (vendors/decision-cards.ts), each
   * request within `timeoutMs`; undefined when its settings name no chat for them.
   */
  decisionCards?(settings: Settings, options: { timeoutMs: number }): DecisionCardSender | undefined;
  /**
   * Writes an approval's order number into the approval (vendors/approval-receipts.ts), each
   * request within `timeoutMs`; undefined when its settings turn receipts off.
   */
  receipts?(settings: Settings, options: { timeoutMs: number }): ApprovalReceiptPoster | undefined;
}

/** Checks a vendor's module against its own settings' type; the registry then holds it as any other. */
export function oaVendor<Settings>(module: OaVendorModule<Settings>): OaVendorModule<Settings> {
  return module;
}

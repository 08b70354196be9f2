// What an OA connector is, seen from the HTTP edge: it reads one inbound callback of its vendor
// (verifies, decrypts, answers a registration challenge) and says what arrived, with the reply the
// vendor expects once the service has done its part. It starts nothing and records nothing: the
// route does, through the one start path, and then sends the reply inside the vendor's deadline.
import type { CardClickReply } from '../domain/decision-cards.js';
import type { OaInstanceStatus, OaVendor } from '../domain/oa-approval.js';

export interface InboundRequest {
  /** Absent means POST; WeCom checks its callback URL with a GET (`oaCallbackMethods`). */
  method?: 'GET' | 'POST';
  headers: Record<string, string | string[] | undefined>;
  /** The query string's parameters (DingTalk and WeCom sign with `msg_signature`, `timestamp`, `nonce`). */
  query: Record<string, string | undefined>;
  rawBody: Buffer;
}

export interface ConnectorReply {
  status: number;
  headers?: Record<string, string>;
  /** Sent as JSON, or as it is when a string goes with a `content-type` of its own (WeCom's text). */
  body: unknown;
}

/** One approval event as the vendor told it; the instance id becomes the business key. */
export interface OaEvent {
  vendor: OaVendor;
  /** The vendor's own id of this delivery of the event (recorded, never the key). */
  eventId: string;
  /** The vendor's event type, e.g. `approval_instance`, `bpms_instance_change`, `sys_approval_change`. */
  eventType: string;
  /** The approval instance: Feishu's `instance_code`, DingTalk's `processInstanceId`, WeCom's `SpNo`. */
  instanceId: string;
  status: OaInstanceStatus;
  /**
   * The approval definition the instance belongs to: Feishu's `approval_code`, DingTalk's
   * `processCode`, WeCom's `TemplateId`. The mapping file may name the definitions that are orders.
   */
  definitionCode: string | undefined;
}

/** A click on a decision card's button, as the vendor's verified callback told it. */
export interface CardClickEvent {
  vendor: OaVendor;
  /** The vendor's id of this delivery of the click. */
  eventId: string;
  /** Who clicked, in the vendor's ids (Feishu's open id). */
  userId: string;
  /** What the button carries (vendors/<vendor>/decision-cards.ts): the key, its episode, the decision. */
  idempotencyKey: string;
  episode: string;
  decision: string;
}

export type { CardClickReply } from '../domain/decision-cards.js';

export type InboundCallback =
  /** The vendor checks the callback URL: answer and do nothing else. */
  | { kind: 'challenge'; reply: ConnectorReply }
  /** An approval event, whatever its status; `ack` is what the vendor expects back. */
  | { kind: 'event'; event: OaEvent; ack: ConnectorReply }
  /** A click on a decision card: answered inside the vendor's deadline with `reply`. */
  | { kind: 'card-click'; click: CardClickEvent; reply: (answer: CardClickReply) => ConnectorReply }
  /** Authentic, but not an approval event: acknowledged and otherwise ignored. */
  | { kind: 'other'; eventType: string; ack: ConnectorReply }
  /**
   * Authentic, but an approval event the service cannot use (no event id, no instance id):
   * acknowledged and logged, nothing recorded. The vendor sent it and would send the same bytes
   * again after any refusal, for ever; the log is where an operator learns of it.
   */
  | { kind: 'unusable'; reason: string; ack: ConnectorReply }
  /**
   * Not proven to come from the vendor (no or a wrong signature or token, a stale timestamp, a
   * body that does not decrypt or parse): nothing is recorded, and the route answers every
   * refusal alike. `reason` is for the log only, never for the answer: two different answers
   * would tell a caller without the keys which check its forgery got past.
   */
  | { kind: 'refused'; reason: string };

export interface Connector {
  vendor: OaVendor;
  /** How long the vendor waits for the reply before it redelivers (Feishu 3 s, DingTalk 1.5 s, WeCom 5 s). */
  vendorDeadlineMs: number;
  read(request: InboundRequest): InboundCallback;
  /** The people allowed to decide from the vendor's decision cards; undefined: it posts none. */
  decisionOperators?: ReadonlySet<string> | undefined;
}

// What an OA connector is, seen from the HTTP edge: it reads one inbound callback of its vendor
// (verifies, decrypts, answers a registration challenge) and says what arrived, with the reply the
// vendor expects once the service has done its part. It starts nothing and records nothing: the
// route does, through the one start path, and then sends the reply inside the vendor's deadline.
import type { OaInstanceStatus, OaVendor } from '../../domain/oa-approval.js';

export interface InboundRequest {
  headers: Record<string, string | string[] | undefined>;
  /** The query string's parameters (DingTalk signs with `msg_signature`, `timestamp`, `nonce`). */
  query: Record<string, string | undefined>;
  rawBody: Buffer;
}

export interface ConnectorReply {
  status: number;
  headers?: Record<string, string>;
  /** Sent as JSON. */
  body: unknown;
}

/** One approval event as the vendor told it; the instance id becomes the business key. */
export interface OaEvent {
  vendor: OaVendor;
  /** The vendor's own id of this delivery of the event (recorded, never the key). */
  eventId: string;
  /** The vendor's event type, e.g. `approval_instance` or `bpms_instance_change`. */
  eventType: string;
  /** The approval instance: Feishu's `instance_code`, DingTalk's `processInstanceId`. */
  instanceId: string;
  status: OaInstanceStatus;
  /**
   * The approval definition the instance belongs to: Feishu's `approval_code`, DingTalk's
   * `processCode`. The mapping file may name the definitions that are orders.
   */
  definitionCode: string | undefined;
}

export type InboundCallback =
  /** The vendor checks the callback URL: answer and do nothing else. */
  | { kind: 'challenge'; reply: ConnectorReply }
  /** An approval event, whatever its status; `ack` is what the vendor expects back. */
  | { kind: 'event'; event: OaEvent; ack: ConnectorReply }
  /** Authentic, but not an approval event: acknowledged and otherwise ignored. */
  | { kind: 'other'; eventType: string; ack: ConnectorReply }
  /** Not authentic or not readable (wrong token or signature, undecryptable): nothing is recorded. */
  | { kind: 'refused'; status: 400 | 401; reason: string };

export interface Connector {
  vendor: OaVendor;
  /** How long the vendor waits for the reply before it redelivers (Feishu 3 s, DingTalk 1.5 s). */
  vendorDeadlineMs: number;
  read(request: InboundRequest): InboundCallback;
}

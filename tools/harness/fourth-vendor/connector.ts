// Acme's callback: a JSON body signed with HMAC-SHA256 over `<timestamp>.<body>` under the signing
// secret, the hex digest in `x-acme-signature` and the unix seconds in `x-acme-timestamp`. The
// signature is checked before the body is read, the timestamp once the signature holds; every
// refusal's reason is for the log alone (vendors/connector.ts).
import { createHmac } from 'node:crypto';
import { timestampOutsideWindow } from '../../../domain-node/signature.js';
import type { Connector, ConnectorReply, InboundCallback, InboundRequest } from '../../../vendors/connector.js';
import { headerOf, jsonObjectOf, refused, sameSecret, textOf } from '../../../vendors/inbound.js';
import type { CallbackDoor } from '../../../vendors/oa-vendor.js';
import { acmeStatus } from './status.js';

export const ACME_SIGNATURE_HEADER = 'x-acme-signature';
export const ACME_TIMESTAMP_HEADER = 'x-acme-timestamp';
/** The only event type that is an approval's. */
export const ACME_APPROVAL_EVENT = 'approval.changed';
const ACK: ConnectorReply = { status: 200, body: { received: true } };

/** The signature of `rawBody` sent at `timestamp` (unix seconds). */
export function acmeSignature(signingSecret: string, timestamp: string, rawBody: Buffer): string {
  return createHmac('sha256', signingSecret).update(`${timestamp}.`).update(rawBody).digest('hex');
}

export function createAcmeConnector(options: { signingSecret: string } & CallbackDoor): Connector {
  const read = (request: InboundRequest): InboundCallback => {
    const signature = headerOf(request, ACME_SIGNATURE_HEADER);
    if (signature === undefined) return refused(`${ACME_SIGNATURE_HEADER} is missing`);
    const timestamp = headerOf(request, ACME_TIMESTAMP_HEADER) ?? '';
    if (!sameSecret(signature, acmeSignature(options.signingSecret, timestamp, request.rawBody))) {
      return refused(`${ACME_SIGNATURE_HEADER} does not match the body`);
    }
    const stale = timestampOutsideWindow(
      ACME_TIMESTAMP_HEADER,
      timestamp,
      'seconds',
      options.toleranceSeconds,
      options.now(),
    );
    if (stale) return refused(stale);
    const body = jsonObjectOf(request.rawBody.toString('utf8'));
    if (!body) return refused('the body is not a JSON object');
    const eventType = textOf(body.type) ?? 'unknown';
    if (eventType !== ACME_APPROVAL_EVENT) return { kind: 'other', eventType, ack: ACK };
    const eventId = textOf(body.event_id);
    const instanceId = textOf(body.instance_id);
    if (!eventId || !instanceId) return { kind: 'unusable', reason: 'no event_id or instance_id', ack: ACK };
    return {
      kind: 'event',
      event: {
        vendor: 'acme',
        eventId,
        eventType,
        instanceId,
        status: acmeStatus(body.status),
        definitionCode: textOf(body.definition),
      },
      ack: ACK,
    };
  };
  return { vendor: 'acme', vendorDeadlineMs: 10_000, read };
}

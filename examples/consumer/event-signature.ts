// Whether an `order.created` event was signed by the service, for both reference consumers: the
// Standard Webhooks headers (`webhook-id`, `webhook-timestamp`, `webhook-signature`) over the raw
// body, checked by the service's own signature module with DOWNSTREAM_SECRET and, during a
// rotation, DOWNSTREAM_SECRET_PREVIOUS. Over HTTP the timestamp must be within five minutes of the
// clock, as Standard Webhooks libraries hold it; from the broker any age is taken, because a
// durable queue holds a genuine message for hours and the ledger makes a replay harmless
// (docs/architecture.md, decision 24). Each check runs before the body is read.
import {
  type SignatureCheck,
  type SigningSecrets,
  STANDARD_HEADERS,
  verifyStandardSignature,
  verifyStandardSignatureOfAnyAge,
} from '../../domain-node/signature.js';

/** A header of the delivery by its lower-case name, undefined when absent or not text. */
export type HeaderOf = (name: string) => string | undefined;

/** Whether the event's signature holds; the reason, for the log only, when it does not. */
export type EventVerifier = (rawBody: Buffer, header: HeaderOf) => SignatureCheck;

/** The window a Standard Webhooks library holds an HTTP delivery's timestamp to, either way. */
const HTTP_TOLERANCE_SECONDS = 5 * 60;

/** An HTTP delivery: signed, and sent within five minutes of now. */
export function httpEventVerifier(secrets: SigningSecrets): EventVerifier {
  return (rawBody, header) =>
    verifyStandardSignature({
      ...secrets,
      ...standardHeaders(header),
      rawBody,
      toleranceSeconds: HTTP_TOLERANCE_SECONDS,
    });
}

/** A broker message: signed, whenever it was published. */
export function brokerEventVerifier(secrets: SigningSecrets): EventVerifier {
  return (rawBody, header) => verifyStandardSignatureOfAnyAge({ ...secrets, ...standardHeaders(header), rawBody });
}

function standardHeaders(header: HeaderOf) {
  return {
    idHeader: header(STANDARD_HEADERS.id),
    timestampHeader: header(STANDARD_HEADERS.timestamp),
    signatureHeader: header(STANDARD_HEADERS.signature),
  };
}

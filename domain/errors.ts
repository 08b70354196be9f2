// Business failures of an order write. Each has a stable `type` that crosses into Temporal as the
// ApplicationFailure type and comes back out in statuses; none of them is ever retried
// (see domain/error-classification.ts).

/** A line asks for more stock than is available; retrying cannot make stock appear. */
export class InsufficientStockError extends Error {
  readonly type = 'InsufficientStock';
  constructor(
    readonly sku: string,
    readonly requested: number,
    readonly available: number,
  ) {
    super(`insufficient stock for ${sku}: requested ${requested}, available ${available}`);
    this.name = 'InsufficientStockError';
  }
}

/** A line names a SKU the inventory does not know. */
export class UnknownSkuError extends Error {
  readonly type = 'UnknownSku';
  constructor(readonly sku: string) {
    super(`unknown SKU ${sku}`);
    this.name = 'UnknownSkuError';
  }
}

/** The key was already used for a different order: a conflict, never a success. */
export class IdempotencyConflictError extends Error {
  readonly type = 'IdempotencyKeyConflict';
  constructor(
    readonly key: string,
    readonly storedFingerprint: string,
    readonly incomingFingerprint: string,
    readonly differences: readonly string[] = [],
  ) {
    super(
      `idempotency key ${key} was already used for a different order` +
        (differences.length > 0 ? ` (differs in ${differences.join(', ')})` : ''),
    );
    this.name = 'IdempotencyConflictError';
  }
}

/**
 * The key was claimed through another door (docs/architecture.md, decision 38): a conflict like any
 * other at the door, which names no difference — what the key's owner asked for is not the
 * caller's to learn. The sources are for the log and the operator's listing.
 */
export class KeySourceConflictError extends IdempotencyConflictError {
  constructor(
    key: string,
    /** The door that claimed the key first and holds it. */
    readonly claimedBy: string,
    /** The door whose delivery was refused. */
    readonly door: string,
    storedFingerprint: string,
    incomingFingerprint: string,
  ) {
    super(key, storedFingerprint, incomingFingerprint);
    this.message = `idempotency key ${key} was claimed through ${claimedBy}; a delivery through ${door} is refused`;
    this.name = 'KeySourceConflictError';
  }
}

/** The downstream answered with a non-2xx status. Whether it is retried is the table's call. */
export class DownstreamHttpError extends Error {
  readonly type = 'DownstreamHttpError';
  constructor(
    readonly status: number,
    /** The delay the downstream asked for (Retry-After), if any. */
    readonly retryAfterMs: number | undefined,
    readonly responseSnippet: string,
  ) {
    super(`downstream answered ${status}${responseSnippet ? `: ${responseSnippet}` : ''}`);
    this.name = 'DownstreamHttpError';
  }
}

/** No answer within the per-attempt timeout: the outcome is unknown. */
export class DownstreamTimeoutError extends Error {
  readonly type = 'DownstreamTimeout';
  constructor(readonly timeoutMs: number) {
    super(`downstream did not answer within ${timeoutMs} ms`);
    this.name = 'DownstreamTimeoutError';
  }
}

/**
 * An OA system's open API could not give the approval instance. `status` is the HTTP status, or
 * undefined when no answer came (timeout, connection refused). Whether it is retried is the
 * classification table's call: 5xx, 429 and no answer are; 401/403 (after one token refresh),
 * 404 and a malformed answer are not.
 */
export class OaApiError extends Error {
  readonly type = 'OaApiError';
  constructor(
    readonly vendor: string,
    readonly status: number | undefined,
    /** The delay the API asked for (Retry-After), if any. */
    readonly retryAfterMs: number | undefined,
    message: string,
  ) {
    super(message);
    this.name = 'OaApiError';
  }
}

/** The approval's form does not map to an order (OA_FORM_MAPPING): a business failure, never retried. */
export class UnmappableFormError extends Error {
  readonly type = 'UnmappableForm';
  constructor(
    readonly instanceId: string,
    readonly reasons: readonly string[],
  ) {
    super(`the form of approval ${instanceId} does not map to an order: ${reasons.join('; ')}`);
    this.name = 'UnmappableFormError';
  }
}

/**
 * The broker took no part of a publish: no connection, a channel closed, a refused handshake.
 * Whether the message reached a queue is unknown when it closed mid-way; the retry publishes the
 * same message id again.
 */
export class BrokerUnavailableError extends Error {
  readonly type = 'BrokerUnavailable';
  constructor(
    readonly address: string,
    reason: string,
  ) {
    super(`the broker at ${address} could not take the event: ${reason}`);
    this.name = 'BrokerUnavailableError';
  }
}

/** The broker returned the message (published `mandatory`): no queue is bound for its routing key. */
export class BrokerUnroutableError extends Error {
  readonly type = 'BrokerUnroutable';
  constructor(
    readonly exchange: string,
    readonly routingKey: string,
    readonly replyCode: number,
    readonly replyText: string,
  ) {
    super(`no queue bound to exchange ${exchange} for routing key ${routingKey} (${replyCode} ${replyText})`);
    this.name = 'BrokerUnroutableError';
  }
}

/**
 * The order was written by a worker that delivers to a target this worker lacks (a deploy that adds
 * or removes DOWNSTREAM_URL / AMQP_URL is under way): delivering only to the others would record
 * DELIVERED for an event that target never got.
 */
export class DeliveryTargetMissingError extends Error {
  readonly type = 'DeliveryTargetMissing';
  constructor(readonly missing: readonly string[]) {
    super(
      `the order is delivered to ${missing.join(' and ')} but this worker has no ${missing
        .map((target) => (target === 'broker' ? 'AMQP_URL' : 'DOWNSTREAM_URL'))
        .join(' or ')}; another worker, or this one once configured, delivers it`,
    );
    this.name = 'DeliveryTargetMissingError';
  }
}

/** The broker refused to take responsibility for the message (basic.nack): its own failure. */
export class BrokerNackedError extends Error {
  readonly type = 'BrokerNacked';
  constructor(readonly exchange: string) {
    super(`the broker nacked the event on exchange ${exchange}`);
    this.name = 'BrokerNackedError';
  }
}

/** No confirm within the per-attempt timeout: the message may or may not be queued. */
export class BrokerConfirmTimeoutError extends Error {
  readonly type = 'BrokerConfirmTimeout';
  constructor(readonly timeoutMs: number) {
    super(`the broker did not confirm the event within ${timeoutMs} ms`);
    this.name = 'BrokerConfirmTimeoutError';
  }
}

/**
 * The message of anything thrown, without ever throwing itself: JavaScript lets code throw any
 * value, and `String(value)` throws for some (an object whose `toString` is not a function, one
 * with no prototype). A failure being reported must not turn into a second, unreported one.
 */
export function messageOf(thrown: unknown): string {
  if (thrown instanceof Error) return thrown.message;
  try {
    return String(thrown);
  } catch {
    return Object.prototype.toString.call(thrown);
  }
}

// Client connections to Temporal, from the one typed config. The API connects lazily: it starts, and answers 503, while Temporal is down.
import { Client, Connection } from '@temporalio/client';

export interface TemporalTarget {
  address: string;
  namespace: string;
}

export function createLazyClient(target: TemporalTarget): Client {
  const connection = Connection.lazy({ address: target.address, connectTimeout: '3 seconds' });
  return new Client({ connection, namespace: target.namespace });
}

export async function connectClient(target: TemporalTarget): Promise<Client> {
  const connection = await Connection.connect({ address: target.address, connectTimeout: '5 seconds' });
  return new Client({ connection, namespace: target.namespace });
}

/** The error and each of its causes, as `{ code, message }`. */
function* causeChain(error: unknown): Generator<{ code?: unknown; message?: unknown }> {
  const seen = new Set<unknown>();
  for (let current: unknown = error; current && typeof current === 'object' && !seen.has(current); ) {
    seen.add(current);
    yield current;
    current = (current as { cause?: unknown }).cause;
  }
}

const NO_CONNECTION = /Failed to connect|ECONNREFUSED|No connection established/i;
// gRPC names the phase a call died in; these phases all come before anything is sent.
const BEFORE_SENDING = /waiting for (metadata filters|name resolution|LB pick)/i;

/** True when an error from a Temporal call means "could not reach the server" (safe to redeliver). */
export function isTemporalUnreachable(error: unknown): boolean {
  for (const { code, message } of causeChain(error)) {
    // gRPC UNAVAILABLE (14), DEADLINE_EXCEEDED (4), CANCELLED (1) by our own deadline.
    if (code === 14 || code === 4 || code === 1) return true;
    if (typeof message === 'string' && (NO_CONNECTION.test(message) || /deadline/i.test(message))) return true;
  }
  return false;
}

/**
 * True only when the call certainly never reached Temporal (no connection could be made). A
 * deadline or a dropped connection mid-call may come after the server acted: the start may have
 * happened, and the caller must not forget the request.
 */
export function certainlyNotSent(error: unknown): boolean {
  for (const { message } of causeChain(error)) {
    if (typeof message === 'string' && (NO_CONNECTION.test(message) || BEFORE_SENDING.test(message))) return true;
  }
  return false;
}

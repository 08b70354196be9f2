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

/** True when an error from a Temporal call means "could not reach the server" (safe to redeliver). */
export function isTemporalUnreachable(error: unknown): boolean {
  const seen = new Set<unknown>();
  for (let current: unknown = error; current && typeof current === 'object' && !seen.has(current); ) {
    seen.add(current);
    const { code, message } = current as { code?: unknown; message?: unknown };
    // gRPC UNAVAILABLE (14), DEADLINE_EXCEEDED (4), CANCELLED (1) by our own deadline.
    if (code === 14 || code === 4 || code === 1) return true;
    if (
      typeof message === 'string' &&
      /Failed to connect|ECONNREFUSED|No connection established|deadline/i.test(message)
    ) {
      return true;
    }
    current = (current as { cause?: unknown }).cause;
  }
  return false;
}

/**
 * True only when the call certainly never reached Temporal (no connection could be made). A
 * deadline or a dropped connection mid-call may come after the server acted: the start may have
 * happened, and the caller must not forget the request.
 */
export function certainlyNotSent(error: unknown): boolean {
  const seen = new Set<unknown>();
  for (let current: unknown = error; current && typeof current === 'object' && !seen.has(current); ) {
    seen.add(current);
    const { message } = current as { message?: unknown };
    // gRPC names the phase a call died in; these phases all come before anything is sent.
    const beforeSending = /waiting for (metadata filters|name resolution|LB pick)/i;
    if (
      typeof message === 'string' &&
      (/Failed to connect|ECONNREFUSED|No connection established/i.test(message) || beforeSending.test(message))
    ) {
      return true;
    }
    current = (current as { cause?: unknown }).cause;
  }
  return false;
}

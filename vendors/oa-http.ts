// One bounded exchange with an OA system's open API: the request gets the per-request timeout,
// and an exchange that brings no answer (timeout, refused or reset connection) becomes an
// OaApiError without a status, which the classification table retries. An answer, whatever its
// status, is returned for the vendor's reader to judge.
import { OaApiError } from '../domain/errors.js';
import type { OaVendor } from '../domain/oa-approval.js';
import { parseRetryAfterMs } from '../domain/retry-after.js';

export interface OaAnswer {
  status: number;
  retryAfterMs: number | undefined;
  /** The body as JSON, or undefined when it is not JSON. */
  json: unknown;
  /** The start of the body, for error messages. */
  snippet: string;
}

export async function exchange(
  vendor: OaVendor,
  url: URL,
  init: { method: 'GET' | 'POST' | 'PATCH' | 'PUT'; headers?: Record<string, string>; body?: unknown },
  timeoutMs: number,
): Promise<OaAnswer> {
  let response: Response;
  let text: string;
  try {
    response = await fetch(url, {
      method: init.method,
      headers: {
        accept: 'application/json',
        ...(init.body === undefined ? {} : { 'content-type': 'application/json' }),
        ...init.headers,
      },
      body: init.body === undefined ? undefined : JSON.stringify(init.body),
      signal: AbortSignal.timeout(timeoutMs),
      redirect: 'error',
    });
    text = await response.text();
  } catch (error) {
    const timedOut = error instanceof Error && (error.name === 'TimeoutError' || error.name === 'AbortError');
    const reason = timedOut
      ? `no answer within ${timeoutMs} ms`
      : `no answer: ${(error instanceof Error && error.cause instanceof Error ? error.cause : (error as Error)).message}`;
    throw new OaApiError(vendor, undefined, undefined, `${vendor} ${init.method} ${url.pathname}: ${reason}`);
  }
  let json: unknown;
  try {
    json = text.length > 0 ? JSON.parse(text) : undefined;
  } catch {
    json = undefined;
  }
  return {
    status: response.status,
    retryAfterMs: parseRetryAfterMs(response.headers.get('retry-after')),
    json,
    snippet: text.slice(0, 200),
  };
}

// DingTalk's new open API on api.dingtalk.com, as the reader, the receipts and the cards call it: an app
// access token (`POST /v1.0/oauth2/accessToken`, cached by vendors/token-cache.ts) on every
// request, and one way of taking its answers. The API answers failures with an HTTP status and
// `{ code, message }`:
//  - HTTP 401/403 or code InvalidAuthentication: the token is refreshed once and the request
//    repeated once; then OaApiError(the status).
//  - HTTP 429 or a throttling code (…QpsLimit…, Throttling…): OaApiError(429) with Retry-After.
//  - HTTP 5xx: OaApiError(status); no answer: OaApiError(undefined). The caller's policy retries.
//  - any other 4xx: OaApiError(status), not retried; `success: false` under HTTP 200: 400.
// An error names what failed, the status and DingTalk's code and message; never the request,
// which carries the token or the app secret.
import { OaApiError } from '../../domain/errors.js';
import { textOfValue } from '../form-text.js';
import { exchange, type OaAnswer } from '../oa-http.js';
import { createTokenCache, readWithOneRefresh } from '../token-cache.js';

export interface DingTalkAppOptions {
  appKey: string;
  appSecret: string;
  /** DINGTALK_API_BASE_URL; https://api.dingtalk.com by default. */
  baseUrl?: string;
  /** Per request (token or call); 5 s by default. */
  timeoutMs?: number;
}

interface DingTalkBody {
  code?: unknown;
  message?: unknown;
  success?: unknown;
  result?: unknown;
  accessToken?: unknown;
  expireIn?: unknown;
}

const bodyOf = (answer: OaAnswer): DingTalkBody =>
  answer.json !== null && typeof answer.json === 'object' ? answer.json : {};
const codeOf = (answer: OaAnswer): string =>
  typeof bodyOf(answer).code === 'string' ? String(bodyOf(answer).code) : '';
const isThrottled = (answer: OaAnswer) => answer.status === 429 || /QpsLimit|Throttling/i.test(codeOf(answer));

export interface DingTalkOpenApi {
  /**
   * One request as the app, `what` naming it in an error; resolves with the answer's `result`.
   * `query` goes into the URL, `body` (POST, PUT) as JSON. A refusal whose code is one of
   * `request.accept` resolves as `{ refusedAs: code }`, for the caller to read as an answer.
   */
  call(
    method: 'GET' | 'POST' | 'PUT',
    path: string,
    request: { query?: Record<string, string>; body?: unknown; accept?: readonly string[] },
    what: string,
  ): Promise<unknown>;
}

/** How `call` resolves a refusal the caller accepted as an answer. */
export interface AcceptedRefusal {
  refusedAs: string;
}

export const isAcceptedRefusal = (value: unknown): value is AcceptedRefusal =>
  value !== null && typeof value === 'object' && typeof (value as { refusedAs?: unknown }).refusedAs === 'string';

export function createDingTalkOpenApi(options: DingTalkAppOptions): DingTalkOpenApi {
  const base = options.baseUrl ?? 'https://api.dingtalk.com';
  const timeoutMs = options.timeoutMs ?? 5_000;
  const fail = (status: number | undefined, answer: OaAnswer | undefined, what: string) =>
    new OaApiError(
      'dingtalk',
      status,
      answer?.retryAfterMs,
      `dingtalk ${what}: HTTP ${answer?.status ?? '-'}` +
        (answer && codeOf(answer) ? `, ${codeOf(answer)} ${textOfValue(bodyOf(answer).message)}` : ''),
    );

  const tokens = createTokenCache(async () => {
    const answer = await exchange(
      'dingtalk',
      new URL('/v1.0/oauth2/accessToken', base),
      { method: 'POST', body: { appKey: options.appKey, appSecret: options.appSecret } },
      timeoutMs,
    );
    const body = bodyOf(answer);
    if (isThrottled(answer)) throw fail(429, answer, 'token');
    if (answer.status >= 500) throw fail(answer.status, answer, 'token');
    if (answer.status === 200 && typeof body.accessToken === 'string' && typeof body.expireIn === 'number') {
      return { token: body.accessToken, expiresInSeconds: body.expireIn };
    }
    throw fail(401, answer, 'token refused');
  });

  return {
    call: (method, path, request, what) =>
      readWithOneRefresh(tokens, async (token) => {
        const url = new URL(path, base);
        for (const [name, value] of Object.entries(request.query ?? {})) url.searchParams.set(name, value);
        const answer = await exchange(
          'dingtalk',
          url,
          {
            method,
            headers: { 'x-acs-dingtalk-access-token': token },
            ...(method === 'GET' ? {} : { body: request.body }),
          },
          timeoutMs,
        );
        if (answer.status === 401 || answer.status === 403 || codeOf(answer) === 'InvalidAuthentication') {
          return {
            kind: 'token-invalid',
            refused: () => fail(answer.status === 403 ? 403 : 401, answer, `${what} after a token refresh`),
          };
        }
        if (isThrottled(answer)) throw fail(429, answer, what);
        if (answer.status >= 400 && request.accept?.includes(codeOf(answer))) {
          return { kind: 'ok', value: { refusedAs: codeOf(answer) } satisfies AcceptedRefusal };
        }
        if (answer.status >= 400) throw fail(answer.status, answer, what);
        const body = bodyOf(answer);
        if (body.success === false) throw fail(400, answer, what);
        return { kind: 'ok', value: body.result };
      }),
  };
}

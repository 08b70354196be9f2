// WeCom's (企业微信) server API on qyapi.weixin.qq.com, as the reader and the receipts call it: an
// access token (`GET /cgi-bin/gettoken?corpid=&corpsecret=`, cached by vendors/token-cache.ts) in
// every request's query, and one way of taking its answers. Both URLs carry a credential in their
// query (the secret, the token): no error message names more of a URL than its path (oa-http.ts).
//
// WeCom answers nearly every failure under HTTP 200 with an `errcode`. How each is taken:
//  - token invalid or expired (40014, 42001), HTTP 401/403: the token is refreshed once and the
//    request repeated once; then OaApiError(401 or the status).
//  - frequency limits (45009, 45033) or HTTP 429: OaApiError(429) with Retry-After.
//  - system busy (-1), HTTP 5xx: OaApiError(503 or the status); no answer: OaApiError(undefined).
//    The caller's policy retries.
//  - the app may not call the API (48002, 60011, 60020 an IP not on the allow list):
//    OaApiError(403).
//  - any other non-zero errcode: OaApiError(400), not retried — the API refused this request and
//    will refuse it again (an unknown sp_no, for one). At the token: a wrong corp id or secret, 401.
import { OaApiError } from '../../domain/errors.js';
import { textOfValue } from '../form-text.js';
import { exchange, type OaAnswer } from '../oa-http.js';
import { createTokenCache, readWithOneRefresh } from '../token-cache.js';

export interface WeComAppOptions {
  corpId: string;
  /** WECOM_AGENT_SECRET: the approval app's secret, or a self-built app's allowed to call the approval API. */
  agentSecret: string;
  /** WECOM_API_BASE_URL; https://qyapi.weixin.qq.com by default. */
  baseUrl?: string;
  /** Per request (token or call); 5 s by default. */
  timeoutMs?: number;
}

const TOKEN_INVALID = new Set([40014, 42001]);
const RATE_LIMITED = new Set([45009, 45033]);
const BUSY = -1;
const NO_PERMISSION = new Set([48002, 60011, 60020]);

interface WeComBody {
  errcode?: unknown;
  errmsg?: unknown;
  access_token?: unknown;
  expires_in?: unknown;
}

const bodyOf = (answer: OaAnswer): WeComBody =>
  answer.json !== null && typeof answer.json === 'object' ? answer.json : {};
const codeOf = (answer: OaAnswer): number | undefined => {
  const code = bodyOf(answer).errcode;
  return typeof code === 'number' ? code : undefined;
};

export interface WeComServerApi {
  /**
   * One POST as the app to `path`, `what` naming it in an error; resolves with the answer's body,
   * also when its errcode is one of `accept` (a refusal the caller reads as an answer).
   */
  call(path: string, body: unknown, what: string, accept?: readonly number[]): Promise<Record<string, unknown>>;
}

export function createWeComServerApi(options: WeComAppOptions): WeComServerApi {
  const base = options.baseUrl ?? 'https://qyapi.weixin.qq.com';
  const timeoutMs = options.timeoutMs ?? 5_000;
  const fail = (status: number | undefined, answer: OaAnswer | undefined, what: string) =>
    new OaApiError(
      'wecom',
      status,
      answer?.retryAfterMs,
      `wecom ${what}: HTTP ${answer?.status ?? '-'}` +
        (answer && codeOf(answer) !== undefined
          ? `, errcode ${codeOf(answer)} ${textOfValue(bodyOf(answer).errmsg)}`
          : ''),
    );
  /** The failures the token request and a call take alike: limits, a busy or failing server. */
  const throwIfUnavailable = (answer: OaAnswer, what: string) => {
    const code = codeOf(answer);
    if (answer.status === 429 || (code !== undefined && RATE_LIMITED.has(code))) throw fail(429, answer, what);
    if (answer.status >= 500) throw fail(answer.status, answer, what);
    if (code === BUSY) throw fail(503, answer, what);
  };

  const tokens = createTokenCache(async () => {
    const url = new URL('/cgi-bin/gettoken', base);
    url.searchParams.set('corpid', options.corpId);
    url.searchParams.set('corpsecret', options.agentSecret);
    const answer = await exchange('wecom', url, { method: 'GET' }, timeoutMs);
    throwIfUnavailable(answer, 'token');
    const body = bodyOf(answer);
    if (codeOf(answer) === 0 && typeof body.access_token === 'string' && typeof body.expires_in === 'number') {
      return { token: body.access_token, expiresInSeconds: body.expires_in };
    }
    // A wrong corp id or secret: every retry would be refused the same way.
    throw fail(401, answer, 'token refused');
  });

  return {
    call: (path, requestBody, what, accept = []) =>
      readWithOneRefresh(tokens, async (token) => {
        const url = new URL(path, base);
        url.searchParams.set('access_token', token);
        const answer = await exchange('wecom', url, { method: 'POST', body: requestBody }, timeoutMs);
        const code = codeOf(answer);
        if ((code !== undefined && TOKEN_INVALID.has(code)) || answer.status === 401 || answer.status === 403) {
          return {
            kind: 'token-invalid',
            refused: () => fail(answer.status === 403 ? 403 : 401, answer, `${what} after a token refresh`),
          };
        }
        throwIfUnavailable(answer, what);
        if (code !== undefined && NO_PERMISSION.has(code)) throw fail(403, answer, what);
        if (answer.status >= 400) throw fail(answer.status, answer, what);
        if (code !== 0 && !(code !== undefined && accept.includes(code))) {
          throw fail(code === undefined ? answer.status : 400, answer, what);
        }
        return { kind: 'ok', value: bodyOf(answer) as Record<string, unknown> };
      }),
  };
}

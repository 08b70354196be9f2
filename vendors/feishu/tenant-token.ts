// The Feishu app's tenant access token (`POST /open-apis/auth/v3/tenant_access_token/internal`),
// cached by vendors/token-cache.ts, and how a Feishu answer's body, code and failure are read: what
// the approval reader and the decision cards share.
import { OaApiError } from '../../domain/errors.js';
import { textOfValue } from '../form-text.js';
import { exchange, type OaAnswer } from '../oa-http.js';
import { createTokenCache, type TokenCache, type TokenRead } from '../token-cache.js';

export interface FeishuAppOptions {
  appId: string;
  appSecret: string;
  /** FEISHU_API_BASE_URL. */
  baseUrl: string;
  /** Per request. */
  timeoutMs: number;
}

/** The codes Feishu answers for a tenant token that is invalid, expired or missing. */
export const FEISHU_TOKEN_INVALID = new Set([99991661, 99991663, 99991664, 99991668, 99991677]);
/** Feishu's frequency limit. */
export const FEISHU_RATE_LIMITED = 99991400;

export interface FeishuBody {
  code?: unknown;
  msg?: unknown;
  data?: unknown;
  tenant_access_token?: unknown;
  expire?: unknown;
}

export const feishuBodyOf = (answer: OaAnswer): FeishuBody =>
  answer.json !== null && typeof answer.json === 'object' ? answer.json : {};

export const feishuCodeOf = (answer: OaAnswer): number | undefined => {
  const code = feishuBodyOf(answer).code;
  return typeof code === 'number' ? code : undefined;
};

/**
 * An OaApiError naming what failed, the HTTP status and Feishu's code and message; never the
 * request (which carries the token or the app secret).
 */
export function feishuFailure(status: number | undefined, answer: OaAnswer | undefined, what: string): OaApiError {
  return new OaApiError(
    'feishu',
    status,
    answer?.retryAfterMs,
    `feishu ${what}: HTTP ${answer?.status ?? '-'}` +
      (answer && feishuCodeOf(answer) !== undefined
        ? `, code ${feishuCodeOf(answer)} ${textOfValue(feishuBodyOf(answer).msg)}`
        : ''),
  );
}

/** The app's tenant access token, asked for with its id and secret and kept until shortly before it expires. */
export function createFeishuTenantTokens(options: FeishuAppOptions): TokenCache {
  return createTokenCache(async () => {
    const answer = await exchange(
      'feishu',
      new URL('/open-apis/auth/v3/tenant_access_token/internal', options.baseUrl),
      { method: 'POST', body: { app_id: options.appId, app_secret: options.appSecret } },
      options.timeoutMs,
    );
    const body = feishuBodyOf(answer);
    const code = feishuCodeOf(answer);
    if (answer.status === 429 || code === FEISHU_RATE_LIMITED) throw feishuFailure(429, answer, 'token');
    if (answer.status >= 500) throw feishuFailure(answer.status, answer, 'token');
    if (code === 0 && typeof body.tenant_access_token === 'string' && typeof body.expire === 'number') {
      return { token: body.tenant_access_token, expiresInSeconds: body.expire };
    }
    // Wrong app id or secret: every retry would be refused the same way.
    throw feishuFailure(401, answer, 'token refused');
  });
}

/**
 * Feishu's answer to an open-API request (a card, a comment): its `data`, or the token refused (refreshed once by the
 * caller); any other failure thrown as an OaApiError naming the status and code, never the token.
 */
export function judgeFeishuAnswer(answer: OaAnswer, what: string): TokenRead<Record<string, unknown>> {
  const code = feishuCodeOf(answer);
  if ((code !== undefined && FEISHU_TOKEN_INVALID.has(code)) || answer.status === 401 || answer.status === 403) {
    return {
      kind: 'token-invalid',
      refused: () => feishuFailure(answer.status === 403 ? 403 : 401, answer, `${what} after a token refresh`),
    };
  }
  if (answer.status === 429 || code === FEISHU_RATE_LIMITED) throw feishuFailure(429, answer, what);
  if (answer.status >= 400) throw feishuFailure(answer.status, answer, what);
  if (code !== 0) throw feishuFailure(code === undefined ? answer.status : 400, answer, what);
  const data = feishuBodyOf(answer).data;
  return { kind: 'ok', value: data !== null && typeof data === 'object' ? (data as Record<string, unknown>) : {} };
}

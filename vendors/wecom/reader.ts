// Reads a WeCom (企业微信) approval through the server API on qyapi.weixin.qq.com: an access token
// (`GET /cgi-bin/gettoken?corpid=&corpsecret=`), then `POST /cgi-bin/oa/getapprovaldetail` with
// `{ sp_no }`, its `apply_data.contents` reduced to fields and detail tables (`Table`) by title.
// Both URLs carry a credential in their query (the secret, the token): no error message names
// more of a URL than its path (oa-http.ts).
//
// WeCom answers nearly every failure under HTTP 200 with an `errcode`. How each is taken:
//  - token invalid or expired (40014, 42001), HTTP 401/403: the token is refreshed once and the
//    read repeated once; then OaApiError(401 or the status).
//  - frequency limits (45009, 45033) or HTTP 429: OaApiError(429) with Retry-After.
//  - system busy (-1), HTTP 5xx: OaApiError(503 or the status); no answer: OaApiError(undefined).
//    The caller's policy retries.
//  - the app may not call the approval API (48002, 60011, 60020 an IP not on the allow list):
//    OaApiError(403).
//  - any other non-zero errcode: OaApiError(400), not retried — the API refused this read and will
//    refuse it again (an unknown sp_no, for one). At the token: a wrong corp id or secret, 401.
import { OaApiError } from '../../domain/errors.js';
import { wecomStatus } from './status.js';
import type { ApprovalInstance, ApprovalReader, NormalizedForm } from '../approval-reader.js';
import { putFirst, textOfValue } from '../form-text.js';
import { exchange, type OaAnswer } from '../oa-http.js';
import { createTokenCache, readWithOneRefresh, type TokenRead } from '../token-cache.js';

export interface WeComReaderOptions {
  corpId: string;
  /** WECOM_AGENT_SECRET: the approval app's secret, or a self-built app's allowed to call the approval API. */
  agentSecret: string;
  /** WECOM_API_BASE_URL; https://qyapi.weixin.qq.com by default. */
  baseUrl?: string;
  /** Per request (token or read); 5 s by default. */
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
  info?: unknown;
}

const bodyOf = (answer: OaAnswer): WeComBody =>
  answer.json !== null && typeof answer.json === 'object' ? answer.json : {};
const codeOf = (answer: OaAnswer): number | undefined => {
  const code = bodyOf(answer).errcode;
  return typeof code === 'number' ? code : undefined;
};

export function createWeComReader(options: WeComReaderOptions): ApprovalReader {
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
  /** The failures the token request and the read take alike: limits, a busy or failing server. */
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

  type Outcome = TokenRead<Record<string, unknown>>;

  const readOnce = async (instanceId: string, token: string): Promise<Outcome> => {
    const url = new URL('/cgi-bin/oa/getapprovaldetail', base);
    url.searchParams.set('access_token', token);
    const answer = await exchange('wecom', url, { method: 'POST', body: { sp_no: instanceId } }, timeoutMs);
    const code = codeOf(answer);
    if ((code !== undefined && TOKEN_INVALID.has(code)) || answer.status === 401 || answer.status === 403) {
      return {
        kind: 'token-invalid',
        refused: () => fail(answer.status === 403 ? 403 : 401, answer, `read ${instanceId} after a token refresh`),
      };
    }
    throwIfUnavailable(answer, `read ${instanceId}`);
    if (code !== undefined && NO_PERMISSION.has(code)) throw fail(403, answer, `read ${instanceId}`);
    if (answer.status >= 400) throw fail(answer.status, answer, `read ${instanceId}`);
    if (code !== 0) throw fail(code === undefined ? answer.status : 400, answer, `read ${instanceId}`);
    const info = bodyOf(answer).info;
    if (info === null || typeof info !== 'object') throw fail(answer.status, answer, `read ${instanceId}: no info`);
    return { kind: 'ok', value: info as Record<string, unknown> };
  };

  return {
    vendor: 'wecom',
    async readInstance(instanceId) {
      return toInstance(instanceId, await readWithOneRefresh(tokens, (token) => readOnce(instanceId, token)));
    },
  };
}

function toInstance(instanceId: string, info: Record<string, unknown>): ApprovalInstance {
  const status = wecomStatus(info.sp_status);
  const decidedAt = lastDecisionSeconds(info.sp_record);
  return {
    vendor: 'wecom',
    instanceId,
    status,
    form: normalizeWeComForm(instanceId, (info.apply_data as { contents?: unknown } | undefined)?.contents),
    approvedAt: status === 'APPROVED' && decidedAt > 0 ? new Date(decidedAt * 1000).toISOString() : undefined,
  };
}

/** When the last approver decided (unix seconds): the latest `sptime` of the approval's steps, 0 if none. */
function lastDecisionSeconds(records: unknown): number {
  let latest = 0;
  for (const record of Array.isArray(records) ? (records as Array<{ details?: unknown }>) : []) {
    for (const detail of Array.isArray(record?.details) ? (record.details as Array<{ sptime?: unknown }>) : []) {
      const at = Number(detail?.sptime);
      if (Number.isFinite(at) && at > latest) latest = at;
    }
  }
  return latest;
}

interface Control {
  control?: unknown;
  title?: unknown;
  value?: unknown;
}

/** A control's label: its title's text (the first language WeCom gives). */
function titleOf(control: Control): string | undefined {
  const titles = Array.isArray(control?.title) ? (control.title as Array<{ text?: unknown }>) : [];
  const text = titles[0]?.text;
  return typeof text === 'string' && text.length > 0 ? text : undefined;
}

/** WeCom's controls by title; a `Table`'s `children` become its rows, each a list of controls by title. */
export function normalizeWeComForm(instanceId: string, contents: unknown): NormalizedForm {
  if (!Array.isArray(contents)) {
    throw new OaApiError('wecom', 200, undefined, `wecom read ${instanceId}: no apply_data.contents`);
  }
  const normalized: NormalizedForm = { fields: {}, tables: {} };
  for (const control of contents as Control[]) {
    const title = titleOf(control);
    if (title === undefined) continue;
    if (control.control === 'Table') {
      if (Object.hasOwn(normalized.tables, title)) continue;
      const children = (control.value as { children?: unknown } | undefined)?.children;
      normalized.tables[title] = (Array.isArray(children) ? (children as Array<{ list?: unknown }>) : []).map((row) => {
        const cells: Record<string, string> = {};
        for (const cell of Array.isArray(row?.list) ? (row.list as Control[]) : []) {
          const label = titleOf(cell);
          if (label !== undefined) putFirst(cells, label, controlText(cell));
        }
        return cells;
      });
    } else {
      putFirst(normalized.fields, title, controlText(control));
    }
  }
  return normalized;
}

/**
 * A control's value as text, by its kind: `Text`/`Textarea` their text, `Number` `new_number`,
 * `Money` `new_money`, `Selector` the chosen options' texts, `Date` its unix seconds; any other kind
 * its value as JSON, for a mapping that names it to fail on visibly.
 */
function controlText(control: Control): string {
  const value = (control.value ?? {}) as Record<string, unknown>;
  switch (control.control) {
    case 'Text':
    case 'Textarea':
      return textOfValue(value.text);
    case 'Number':
      return textOfValue(value.new_number);
    case 'Money':
      return textOfValue(value.new_money);
    case 'Date':
      return textOfValue((value.date as { s_timestamp?: unknown } | undefined)?.s_timestamp);
    case 'Selector': {
      const options = (value.selector as { options?: unknown } | undefined)?.options;
      return (Array.isArray(options) ? (options as Array<{ value?: Array<{ text?: unknown }> }>) : [])
        .map((option) => (Array.isArray(option?.value) ? textOfValue(option.value[0]?.text) : ''))
        .join(',');
    }
    default:
      return textOfValue(control.value);
  }
}

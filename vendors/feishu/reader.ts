// Reads a Feishu approval instance through the open API: a tenant access token
// (`POST /open-apis/auth/v3/tenant_access_token/internal`), then
// `GET /open-apis/approval/v4/instances/:code`, its form (a JSON string of widgets) reduced to
// fields and detail tables by widget name.
//
// Feishu answers failures with a `code` in the body, often under HTTP 400. How each is taken:
//  - token invalid or missing (99991661, 99991663, 99991664, 99991668, 99991677), HTTP 401/403:
//    the token is refreshed once and the read repeated once; then OaApiError(401 or the status).
//  - frequency limit (99991400) or HTTP 429: OaApiError(429) with Retry-After.
//  - HTTP 5xx: OaApiError(status); no answer: OaApiError(undefined). The caller's policy retries.
//  - the app lacks the scope (99991672, 99991679): OaApiError(403).
//  - any other non-zero code: OaApiError with the HTTP status when it is an error, else 400 —
//    the API refused this read and will refuse it again (an unknown instance code, for one).
import { OaApiError } from '../../domain/errors.js';
import { feishuStatus } from './status.js';
import {
  createFeishuTenantTokens,
  FEISHU_RATE_LIMITED as RATE_LIMITED,
  FEISHU_TOKEN_INVALID as TOKEN_INVALID,
  feishuBodyOf as bodyOf,
  feishuCodeOf as codeOf,
  feishuFailure as fail,
} from './tenant-token.js';
import type { ApprovalInstance, ApprovalReader, NormalizedForm } from '../approval-reader.js';
import { putFirst, textOfValue } from '../form-text.js';
import { exchange } from '../oa-http.js';
import { readWithOneRefresh, type TokenRead } from '../token-cache.js';

export interface FeishuReaderOptions {
  appId: string;
  appSecret: string;
  /** FEISHU_API_BASE_URL; https://open.feishu.cn by default. */
  baseUrl?: string;
  /** Per request (token or read); 5 s by default. */
  timeoutMs?: number;
}

const NO_PERMISSION = new Set([99991672, 99991679]);

export function createFeishuReader(options: FeishuReaderOptions): ApprovalReader {
  const base = options.baseUrl ?? 'https://open.feishu.cn';
  const timeoutMs = options.timeoutMs ?? 5_000;
  const tokens = createFeishuTenantTokens({
    appId: options.appId,
    appSecret: options.appSecret,
    baseUrl: base,
    timeoutMs,
  });

  type Outcome = TokenRead<Record<string, unknown>>;

  const readOnce = async (instanceId: string, token: string): Promise<Outcome> => {
    const answer = await exchange(
      'feishu',
      new URL(`/open-apis/approval/v4/instances/${encodeURIComponent(instanceId)}`, base),
      { method: 'GET', headers: { authorization: `Bearer ${token}` } },
      timeoutMs,
    );
    const code = codeOf(answer);
    if ((code !== undefined && TOKEN_INVALID.has(code)) || answer.status === 401 || answer.status === 403) {
      return {
        kind: 'token-invalid',
        refused: () => fail(answer.status === 403 ? 403 : 401, answer, `read ${instanceId} after a token refresh`),
      };
    }
    if (answer.status === 429 || code === RATE_LIMITED) throw fail(429, answer, `read ${instanceId}`);
    if (answer.status >= 500) throw fail(answer.status, answer, `read ${instanceId}`);
    if (code !== undefined && NO_PERMISSION.has(code)) throw fail(403, answer, `read ${instanceId}`);
    if (answer.status >= 400) throw fail(answer.status, answer, `read ${instanceId}`);
    if (code !== 0) throw fail(code === undefined ? answer.status : 400, answer, `read ${instanceId}`);
    const data = bodyOf(answer).data;
    if (data === null || typeof data !== 'object') throw fail(answer.status, answer, `read ${instanceId}: no data`);
    return { kind: 'ok', value: data as Record<string, unknown> };
  };

  return {
    vendor: 'feishu',
    async readInstance(instanceId) {
      return toInstance(instanceId, await readWithOneRefresh(tokens, (token) => readOnce(instanceId, token)));
    },
  };
}

function toInstance(instanceId: string, data: Record<string, unknown>): ApprovalInstance {
  const status = feishuStatus(data.status);
  const endTime = Number(data.end_time);
  return {
    vendor: 'feishu',
    instanceId,
    status,
    form: normalizeFeishuForm(instanceId, data.form),
    approvedAt: status === 'APPROVED' && endTime > 0 ? new Date(endTime).toISOString() : undefined,
  };
}

interface Widget {
  name?: unknown;
  type?: unknown;
  value?: unknown;
}

/** Feishu's form (a JSON string of widgets) by widget name; `fieldList` widgets become tables. */
export function normalizeFeishuForm(instanceId: string, form: unknown): NormalizedForm {
  let widgets: unknown;
  try {
    widgets = typeof form === 'string' ? JSON.parse(form) : form;
  } catch {
    throw new OaApiError('feishu', 200, undefined, `feishu read ${instanceId}: the form is not JSON`);
  }
  if (!Array.isArray(widgets)) {
    throw new OaApiError('feishu', 200, undefined, `feishu read ${instanceId}: the form is not a list of widgets`);
  }
  const normalized: NormalizedForm = { fields: {}, tables: {} };
  for (const widget of widgets as Widget[]) {
    if (typeof widget?.name !== 'string') continue;
    if (widget.type === 'fieldList') {
      if (Object.hasOwn(normalized.tables, widget.name)) continue;
      const rows = Array.isArray(widget.value) ? (widget.value as unknown[]) : [];
      normalized.tables[widget.name] = rows.map((row) => {
        const cells: Record<string, string> = {};
        for (const cell of Array.isArray(row) ? (row as Widget[]) : []) {
          if (typeof cell?.name === 'string') putFirst(cells, cell.name, textOfValue(cell.value));
        }
        return cells;
      });
    } else {
      putFirst(normalized.fields, widget.name, textOfValue(widget.value));
    }
  }
  return normalized;
}

// Reads a DingTalk approval (process) instance through the new open API on api.dingtalk.com:
// an app access token (`POST /v1.0/oauth2/accessToken`), then
// `GET /v1.0/workflow/processInstances?processInstanceId=`, its `formComponentValues` reduced to
// fields and detail tables (`TableField`) by component name.
//
// The new API answers failures with an HTTP status and `{ code, message }`. How each is taken:
//  - HTTP 401/403 or code InvalidAuthentication: the token is refreshed once and the read
//    repeated once; then OaApiError(the status).
//  - HTTP 429 or a throttling code (…QpsLimit…, Throttling…): OaApiError(429) with Retry-After.
//  - HTTP 5xx: OaApiError(status); no answer: OaApiError(undefined). The caller's policy retries.
//  - any other 4xx: OaApiError(status), not retried; `success: false` under HTTP 200: 400.
import { OaApiError } from '../../domain/errors.js';
import { dingtalkInstanceStatus } from './status.js';
import type { ApprovalInstance, ApprovalReader, NormalizedForm } from '../approval-reader.js';
import { putFirst, textOfValue } from '../form-text.js';
import { exchange, type OaAnswer } from '../oa-http.js';
import { createTokenCache, readWithOneRefresh, type TokenRead } from '../token-cache.js';

export interface DingTalkReaderOptions {
  appKey: string;
  appSecret: string;
  /** DINGTALK_API_BASE_URL; https://api.dingtalk.com by default. */
  baseUrl?: string;
  /** Per request (token or read); 5 s by default. */
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

export function createDingTalkReader(options: DingTalkReaderOptions): ApprovalReader {
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

  type Outcome = TokenRead<Record<string, unknown>>;

  const readOnce = async (instanceId: string, token: string): Promise<Outcome> => {
    const url = new URL('/v1.0/workflow/processInstances', base);
    url.searchParams.set('processInstanceId', instanceId);
    const answer = await exchange(
      'dingtalk',
      url,
      { method: 'GET', headers: { 'x-acs-dingtalk-access-token': token } },
      timeoutMs,
    );
    if (answer.status === 401 || answer.status === 403 || codeOf(answer) === 'InvalidAuthentication') {
      return {
        kind: 'token-invalid',
        refused: () => fail(answer.status === 403 ? 403 : 401, answer, `read ${instanceId} after a token refresh`),
      };
    }
    if (isThrottled(answer)) throw fail(429, answer, `read ${instanceId}`);
    if (answer.status >= 500) throw fail(answer.status, answer, `read ${instanceId}`);
    if (answer.status >= 400) throw fail(answer.status, answer, `read ${instanceId}`);
    const body = bodyOf(answer);
    if (body.success === false) throw fail(400, answer, `read ${instanceId}`);
    if (body.result === null || typeof body.result !== 'object') {
      throw fail(answer.status, answer, `read ${instanceId}: no result`);
    }
    return { kind: 'ok', value: body.result as Record<string, unknown> };
  };

  return {
    vendor: 'dingtalk',
    async readInstance(instanceId) {
      return toInstance(instanceId, await readWithOneRefresh(tokens, (token) => readOnce(instanceId, token)));
    },
  };
}

function toInstance(instanceId: string, result: Record<string, unknown>): ApprovalInstance {
  const status = dingtalkInstanceStatus(result.status, result.result);
  const finished = typeof result.finishTime === 'string' ? Date.parse(result.finishTime) : Number.NaN;
  return {
    vendor: 'dingtalk',
    instanceId,
    status,
    form: normalizeDingTalkForm(instanceId, result.formComponentValues),
    approvedAt: status === 'APPROVED' && !Number.isNaN(finished) ? new Date(finished).toISOString() : undefined,
  };
}

interface Component {
  name?: unknown;
  componentType?: unknown;
  value?: unknown;
}

/** DingTalk's form components by name; a `TableField`'s JSON rows become a table by column label. */
export function normalizeDingTalkForm(instanceId: string, components: unknown): NormalizedForm {
  if (!Array.isArray(components)) {
    throw new OaApiError('dingtalk', 200, undefined, `dingtalk read ${instanceId}: no formComponentValues`);
  }
  const normalized: NormalizedForm = { fields: {}, tables: {} };
  for (const component of components as Component[]) {
    if (typeof component?.name !== 'string') continue;
    if (component.componentType === 'TableField') {
      if (Object.hasOwn(normalized.tables, component.name)) continue;
      normalized.tables[component.name] = tableRows(instanceId, component.name, component.value);
    } else {
      putFirst(normalized.fields, component.name, textOfValue(component.value));
    }
  }
  return normalized;
}

function tableRows(instanceId: string, name: string, value: unknown): Array<Record<string, string>> {
  if (value === undefined || value === null || value === '') return [];
  let rows: unknown;
  try {
    rows = typeof value === 'string' ? JSON.parse(value) : value;
  } catch {
    throw new OaApiError('dingtalk', 200, undefined, `dingtalk read ${instanceId}: table ${name} is not JSON`);
  }
  if (!Array.isArray(rows)) {
    throw new OaApiError(
      'dingtalk',
      200,
      undefined,
      `dingtalk read ${instanceId}: table ${name} is not a list of rows`,
    );
  }
  return rows.map((row) => {
    const cells: Record<string, string> = {};
    const rowValue = (row as { rowValue?: unknown } | null)?.rowValue;
    for (const cell of Array.isArray(rowValue) ? (rowValue as Array<{ label?: unknown; value?: unknown }>) : []) {
      if (typeof cell?.label === 'string') putFirst(cells, cell.label, textOfValue(cell.value));
    }
    return cells;
  });
}

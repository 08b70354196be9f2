// Reads a DingTalk approval (process) instance through the new open API on api.dingtalk.com
// (open-api.ts: the app's access token, and how its failures are taken):
// `GET /v1.0/workflow/processInstances?processInstanceId=`, its `formComponentValues` reduced to
// fields and detail tables (`TableField`) by component name.
import { OaApiError } from '../../domain/errors.js';
import { dingtalkInstanceStatus } from './status.js';
import type { ApprovalInstance, ApprovalReader, NormalizedForm } from '../approval-reader.js';
import { putFirst, textOfValue } from '../form-text.js';
import { createDingTalkOpenApi, type DingTalkAppOptions } from './open-api.js';

export type DingTalkReaderOptions = DingTalkAppOptions;

/** The instance's `result` as the open API gives it: its status, form and operation records. */
export async function readDingTalkInstance(
  api: ReturnType<typeof createDingTalkOpenApi>,
  instanceId: string,
  what = `read ${instanceId}`,
): Promise<Record<string, unknown>> {
  const result = await api.call(
    'GET',
    '/v1.0/workflow/processInstances',
    { query: { processInstanceId: instanceId } },
    what,
  );
  if (result === null || typeof result !== 'object') {
    throw new OaApiError('dingtalk', 200, undefined, `dingtalk ${what}: no result`);
  }
  return result as Record<string, unknown>;
}

export function createDingTalkReader(options: DingTalkReaderOptions): ApprovalReader {
  const api = createDingTalkOpenApi(options);
  return {
    vendor: 'dingtalk',
    async readInstance(instanceId) {
      return toInstance(instanceId, await readDingTalkInstance(api, instanceId));
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

// Reads a WeCom (企业微信) approval through the server API (server-api.ts: the access token, and
// how WeCom's answers are taken): `POST /cgi-bin/oa/getapprovaldetail` with `{ sp_no }`, its
// `apply_data.contents` reduced to fields and detail tables (`Table`) by title.
import { OaApiError } from '../../domain/errors.js';
import { wecomStatus } from './status.js';
import type { ApprovalInstance, ApprovalReader, NormalizedForm } from '../approval-reader.js';
import { putFirst, textOfValue } from '../form-text.js';
import { createWeComServerApi, type WeComAppOptions, type WeComServerApi } from './server-api.js';

export type WeComReaderOptions = WeComAppOptions;

/** The approval's `info` as the server API gives it: its status, applicant, steps and form. */
export async function readWeComApproval(
  api: WeComServerApi,
  instanceId: string,
  what = `read ${instanceId}`,
): Promise<Record<string, unknown>> {
  const body = await api.call('/cgi-bin/oa/getapprovaldetail', { sp_no: instanceId }, what);
  const info = body.info;
  if (info === null || typeof info !== 'object') {
    throw new OaApiError('wecom', 200, undefined, `wecom ${what}: no info`);
  }
  return info as Record<string, unknown>;
}

export function createWeComReader(options: WeComReaderOptions): ApprovalReader {
  const api = createWeComServerApi(options);
  return {
    vendor: 'wecom',
    async readInstance(instanceId) {
      return toInstance(instanceId, await readWeComApproval(api, instanceId));
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

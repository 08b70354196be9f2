// The approval readers of the OA systems whose settings are present, for the worker's
// `readApprovalForm` activity.
import type { OaVendor } from '../domain/oa-approval.js';
import type { WritePolicy } from '../submission/settings.js';
import type { ConnectorsConfig } from './settings.js';
import type { ApprovalReader } from './approval-reader.js';
import { createDingTalkReader } from './dingtalk/reader.js';
import { createFeishuReader } from './feishu/reader.js';
import { createWeComReader } from './wecom/reader.js';

/**
 * One read may take four requests (a token, the read, a fresh token after a refusal, the read
 * again), all inside one activity attempt: each request gets a quarter of its start-to-close
 * timeout, so the attempt's own timeout never cuts a read the reader could still finish.
 */
export function readerRequestTimeoutMs(policy: Pick<WritePolicy, 'startToCloseMs'>): number {
  return Math.max(250, Math.floor(policy.startToCloseMs / 4));
}

export function readersFromConfig(
  config: ConnectorsConfig,
  policy: Pick<WritePolicy, 'startToCloseMs'>,
): Partial<Record<OaVendor, ApprovalReader>> {
  const timeoutMs = readerRequestTimeoutMs(policy);
  const readers: Partial<Record<OaVendor, ApprovalReader>> = {};
  if (config.feishu) {
    readers.feishu = createFeishuReader({
      appId: config.feishu.appId,
      appSecret: config.feishu.appSecret,
      baseUrl: config.feishu.apiBaseUrl,
      timeoutMs,
    });
  }
  if (config.dingtalk) {
    readers.dingtalk = createDingTalkReader({
      appKey: config.dingtalk.appKey,
      appSecret: config.dingtalk.appSecret,
      baseUrl: config.dingtalk.apiBaseUrl,
      timeoutMs,
    });
  }
  if (config.wecom) {
    readers.wecom = createWeComReader({
      corpId: config.wecom.corpId,
      agentSecret: config.wecom.agentSecret,
      baseUrl: config.wecom.apiBaseUrl,
      timeoutMs,
    });
  }
  return readers;
}

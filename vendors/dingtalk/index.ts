// DingTalk as an OA vendor: its settings, its HTTP callback connector, its Stream connection (which
// also takes its decision cards' clicks), its approval reader, its decision cards and its receipts,
// behind the one contract every vendor keeps (vendors/oa-vendor.ts).
import { oaVendor } from '../oa-vendor.js';
import { dingtalkApprovalReceipts } from './approval-receipts.js';
import { dingtalkConnection } from './connection.js';
import { createDingTalkConnector } from './connector.js';
import { dingtalkDecisionCards } from './decision-cards.js';
import { createDingTalkReader } from './reader.js';
import { type DingTalkConfig, dingtalkConnectorSettings } from './settings.js';

export const dingtalk = oaVendor<DingTalkConfig>({
  vendor: 'dingtalk',
  callback: { methods: ['POST'], body: 'json' },
  settings: dingtalkConnectorSettings,
  // In Stream mode the callback is on only while its own keys are set.
  connector: (settings, door) =>
    settings.callback
      ? createDingTalkConnector({
          appKey: settings.appKey,
          aesKey: settings.callback.aesKey,
          token: settings.callback.token,
          ...door,
        })
      : undefined,
  connection: dingtalkConnection,
  reader: (settings, { timeoutMs }) =>
    createDingTalkReader({
      appKey: settings.appKey,
      appSecret: settings.appSecret,
      baseUrl: settings.apiBaseUrl,
      timeoutMs,
    }),
  // No template named for them: no cards.
  decisionCards: (settings, { timeoutMs }) =>
    settings.decisions
      ? dingtalkDecisionCards({
          appKey: settings.appKey,
          appSecret: settings.appSecret,
          baseUrl: settings.apiBaseUrl,
          decisions: settings.decisions,
          timeoutMs,
        })
      : undefined,
  // No user named to comment as: no receipts.
  receipts: (settings, { timeoutMs }) =>
    settings.receipts
      ? dingtalkApprovalReceipts({
          appKey: settings.appKey,
          appSecret: settings.appSecret,
          baseUrl: settings.apiBaseUrl,
          userId: settings.receipts.userId,
          timeoutMs,
        })
      : undefined,
});

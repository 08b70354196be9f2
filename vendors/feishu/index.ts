// Feishu (Lark) as an OA vendor: its settings, its callback connector, its long connection, its
// approval reader, its decision cards and its receipts, behind the one contract every vendor keeps (vendors/oa-vendor.ts).
import { oaVendor } from '../oa-vendor.js';
import { feishuConnection } from './connection.js';
import { createFeishuConnector } from './connector.js';
import { feishuApprovalReceipts } from './approval-receipts.js';
import { feishuDecisionCards } from './decision-cards.js';
import { createFeishuReader } from './reader.js';
import { type FeishuConfig, feishuConnectorSettings } from './settings.js';

export const feishu = oaVendor<FeishuConfig>({
  vendor: 'feishu',
  callback: { methods: ['POST'], body: 'json' },
  settings: feishuConnectorSettings,
  // The callback may be off while the long connection is on.
  connector: (settings, door) =>
    settings.callback
      ? createFeishuConnector({
          encryptKey: settings.callback.encryptKey,
          verificationToken: settings.callback.verificationToken,
          decisionOperators: settings.decisions?.operators,
          ...door,
        })
      : undefined,
  connection: feishuConnection,
  reader: (settings, { timeoutMs }) =>
    createFeishuReader({
      appId: settings.appId,
      appSecret: settings.appSecret,
      baseUrl: settings.apiBaseUrl,
      timeoutMs,
    }),
  // No chat named for them: no cards.
  decisionCards: (settings, { timeoutMs }) =>
    settings.decisions
      ? feishuDecisionCards({
          appId: settings.appId,
          appSecret: settings.appSecret,
          baseUrl: settings.apiBaseUrl,
          chatId: settings.decisions.chatId,
          timeoutMs,
        })
      : undefined,
  // No user named to comment as: no receipts.
  receipts: (settings, { timeoutMs }) =>
    settings.receipts
      ? feishuApprovalReceipts({
          appId: settings.appId,
          appSecret: settings.appSecret,
          baseUrl: settings.apiBaseUrl,
          userId: settings.receipts.userId,
          timeoutMs,
        })
      : undefined,
});

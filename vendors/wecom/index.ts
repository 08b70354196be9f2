// WeCom (WeChat Work) as an OA vendor: its settings, its callback connector (which also answers the
// console's URL check and takes the clicks on its decision cards), its approval reader, its decision cards and its receipts, behind the one contract every vendor keeps
// (vendors/oa-vendor.ts). WeCom pushes events to its callback only: it has no held connection.
import { oaVendor } from '../oa-vendor.js';
import { wecomApprovalReceipts } from './approval-receipts.js';
import { createWeComConnector } from './connector.js';
import { wecomDecisionCards } from './decision-cards.js';
import { createWeComReader } from './reader.js';
import { type WeComConfig, wecomConnectorSettings } from './settings.js';

export const wecom = oaVendor<WeComConfig>({
  vendor: 'wecom',
  callback: { methods: ['GET', 'POST'], body: 'xml' },
  settings: wecomConnectorSettings,
  connector: (settings, door) =>
    createWeComConnector({
      corpId: settings.corpId,
      token: settings.token,
      encodingAesKey: settings.encodingAesKey,
      decisionOperators: settings.decisions?.operators,
      ...door,
    }),
  reader: (settings, { timeoutMs }) =>
    createWeComReader({
      corpId: settings.corpId,
      agentSecret: settings.agentSecret,
      baseUrl: settings.apiBaseUrl,
      timeoutMs,
    }),
  // No members named for them: no cards.
  decisionCards: (settings, { timeoutMs }) =>
    settings.decisions
      ? wecomDecisionCards({
          corpId: settings.corpId,
          agentSecret: settings.agentSecret,
          baseUrl: settings.apiBaseUrl,
          agentId: settings.decisions.agentId,
          toUsers: settings.decisions.toUsers,
          timeoutMs,
        })
      : undefined,
  // WECOM_RECEIPTS off: no receipts.
  receipts: (settings, { timeoutMs }) =>
    settings.receipts
      ? wecomApprovalReceipts({
          corpId: settings.corpId,
          agentSecret: settings.agentSecret,
          baseUrl: settings.apiBaseUrl,
          agentId: settings.receipts.agentId,
          timeoutMs,
        })
      : undefined,
});

// The connectors of the OA systems whose settings are present; a vendor left out answers 404.
import type { OaVendor } from '../../domain/oa-approval.js';
import type { ConnectorsConfig } from '../../services/config/env.js';
import type { Connector } from './connector.js';
import { createDingTalkConnector } from './dingtalk.js';
import { createFeishuConnector } from './feishu.js';

export function connectorsFromConfig(config: ConnectorsConfig): Partial<Record<OaVendor, Connector>> {
  const connectors: Partial<Record<OaVendor, Connector>> = {};
  if (config.feishu) {
    connectors.feishu = createFeishuConnector({
      encryptKey: config.feishu.encryptKey,
      verificationToken: config.feishu.verificationToken,
    });
  }
  if (config.dingtalk) {
    connectors.dingtalk = createDingTalkConnector({
      appKey: config.dingtalk.appKey,
      aesKey: config.dingtalk.aesKey,
      token: config.dingtalk.token,
    });
  }
  return connectors;
}

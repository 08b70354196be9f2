// The callback connectors of the OA systems whose settings are present; a vendor left out answers 404.
import type { OaVendor } from '../domain/oa-approval.js';
import type { Config } from '../services/config/env.js';
import type { Connector } from './connector.js';
import { createDingTalkConnector } from './dingtalk/connector.js';
import { createFeishuConnector } from './feishu/connector.js';
import type { Clock } from './inbound.js';
import { createWeComConnector } from './wecom/connector.js';

/**
 * Every connector bounds its vendor's signed timestamp with WEBHOOK_TOLERANCE_SECONDS, the window
 * of the OA webhook too; `now` is the clock they read (a test passes its own).
 */
export function connectorsFromConfig(
  config: Pick<Config, 'connectors' | 'webhook'>,
  now: Clock = Date.now,
): Partial<Record<OaVendor, Connector>> {
  const { feishu, dingtalk, wecom } = config.connectors;
  const { toleranceSeconds } = config.webhook;
  const connectors: Partial<Record<OaVendor, Connector>> = {};
  // Feishu's callback may be off while its long connection is on (vendors/feishu/long-connection.ts).
  if (feishu?.callback) {
    connectors.feishu = createFeishuConnector({
      encryptKey: feishu.callback.encryptKey,
      verificationToken: feishu.callback.verificationToken,
      toleranceSeconds,
      now,
    });
  }
  // In Stream mode the callback is on only while its own keys are set.
  if (dingtalk?.callback) {
    connectors.dingtalk = createDingTalkConnector({
      appKey: dingtalk.appKey,
      aesKey: dingtalk.callback.aesKey,
      token: dingtalk.callback.token,
      toleranceSeconds,
      now,
    });
  }
  if (wecom) {
    connectors.wecom = createWeComConnector({
      corpId: wecom.corpId,
      token: wecom.token,
      encodingAesKey: wecom.encodingAesKey,
      toleranceSeconds,
      now,
    });
  }
  return connectors;
}

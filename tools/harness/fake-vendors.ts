// The three vendors' fake open APIs started together, with the settings that point a service's
// connectors and readers at them and the secrets their callbacks are built with.
import { type FakeDingTalk, randomDingTalkAesKey, startFakeDingTalk } from './fake-dingtalk.js';
import { type FakeFeishu, startFakeFeishu } from './fake-feishu.js';
import { type FakeWeCom, randomWeComAesKey, startFakeWeCom } from './fake-wecom.js';

export interface FakeVendors {
  feishu: FakeFeishu;
  dingtalk: FakeDingTalk;
  wecom: FakeWeCom;
  /** The callbacks' secrets, as the vendors' consoles would show them. */
  secrets: {
    feishuToken: string;
    feishuEncryptKey: string;
    dingtalkToken: string;
    dingtalkAesKey: string;
    wecomToken: string;
    wecomAesKey: string;
  };
  /** FEISHU_*, DINGTALK_* and WECOM_* for `testConfig`: every connector on, against the fakes. */
  settings: Record<string, string>;
  close: () => Promise<void>;
}

export async function startFakeVendors(): Promise<FakeVendors> {
  const [feishu, dingtalk, wecom] = await Promise.all([startFakeFeishu(), startFakeDingTalk(), startFakeWeCom()]);
  const secrets = {
    feishuToken: 'feishu-verification-token',
    feishuEncryptKey: 'feishu-encrypt-key-0123456789',
    dingtalkToken: 'dingtalk-token',
    dingtalkAesKey: randomDingTalkAesKey(),
    wecomToken: 'wecom-token',
    wecomAesKey: randomWeComAesKey(),
  };
  return {
    feishu,
    dingtalk,
    wecom,
    secrets,
    settings: {
      FEISHU_APP_ID: feishu.appId,
      FEISHU_APP_SECRET: feishu.appSecret,
      FEISHU_ENCRYPT_KEY: secrets.feishuEncryptKey,
      FEISHU_VERIFICATION_TOKEN: secrets.feishuToken,
      FEISHU_API_BASE_URL: feishu.url,
      DINGTALK_APP_KEY: dingtalk.appKey,
      DINGTALK_APP_SECRET: dingtalk.appSecret,
      DINGTALK_AES_KEY: secrets.dingtalkAesKey,
      DINGTALK_TOKEN: secrets.dingtalkToken,
      DINGTALK_API_BASE_URL: dingtalk.url,
      WECOM_CORP_ID: wecom.corpId,
      WECOM_AGENT_SECRET: wecom.agentSecret,
      WECOM_TOKEN: secrets.wecomToken,
      WECOM_ENCODING_AES_KEY: secrets.wecomAesKey,
      WECOM_API_BASE_URL: wecom.url,
    },
    close: async () => {
      await Promise.all([feishu.close(), dingtalk.close(), wecom.close()]);
    },
  };
}

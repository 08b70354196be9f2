// Acme's settings: the app's secret for its open API, the secret its callbacks are signed with, and
// the open API's address. What a vendor's settings.ts hands the configuration
// (vendors/vendor-settings.ts), the secrets and the address production guards among them.
import { z } from 'zod';
import { httpUrlSetting } from '../../../services/config/setting-types.js';
import type { VendorSettings } from '../../../vendors/vendor-settings.js';

const acmeEnv = {
  ACME_APP_SECRET: z.string().min(1).optional(),
  ACME_SIGNING_SECRET: z.string().min(1).optional(),
  ACME_API_BASE_URL: httpUrlSetting.default('https://oa.acme.example'),
};

export interface AcmeConfig {
  appSecret: string;
  signingSecret: string;
  apiBaseUrl: string;
}

export const acmeSettings = {
  env: acmeEnv,
  required: ['ACME_APP_SECRET', 'ACME_SIGNING_SECRET'],
  secrets: ['ACME_APP_SECRET', 'ACME_SIGNING_SECRET'],
  apiUrls: ['ACME_API_BASE_URL'],
  from: (env, _problems, on) =>
    on()
      ? {
          appSecret: env.ACME_APP_SECRET as string,
          signingSecret: env.ACME_SIGNING_SECRET as string,
          apiBaseUrl: env.ACME_API_BASE_URL,
        }
      : undefined,
  events: () => ['callback'],
} satisfies VendorSettings<typeof acmeEnv, AcmeConfig>;

// Acme, a fourth OA vendor that lives outside vendors/: its settings, its callback's connector and
// its approval reader behind the contract every vendor keeps (vendors/oa-vendor.ts). Only its folder
// and a registration make it one of the service's vendors: test/integration/fourth-vendor.test.ts
// registers it with `registerOaVendor` (vendors/registry.ts), where a vendor of the product is one
// line of the registry's list.
import { oaVendor } from '../../../vendors/oa-vendor.js';
import { createAcmeConnector } from './connector.js';
import { createAcmeReader } from './reader.js';
import { type AcmeConfig, acmeSettings } from './settings.js';

export const acme = oaVendor<AcmeConfig>({
  vendor: 'acme',
  callback: { methods: ['POST'], body: 'json' },
  settings: acmeSettings,
  connector: (settings, door) => createAcmeConnector({ signingSecret: settings.signingSecret, ...door }),
  reader: (settings, { timeoutMs }) =>
    createAcmeReader({ appSecret: settings.appSecret, baseUrl: settings.apiBaseUrl, timeoutMs }),
});

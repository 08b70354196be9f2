// `npm run sample [-- --approval-no AP-1 --operation MAIN --wait 5 --base-url http://127.0.0.1:3000
// --scheme oa|standard]`: sends one signed sample approval to a running service, with the
// development secret kept by `npm run dev` (or WEBHOOK_SECRET), signed in the scheme the service
// takes (WEBHOOK_SIGNATURE_SCHEME), and prints the answer. `--wait` asks the service to wait for
// the write (`Prefer: wait=<seconds>`), so the answer carries the order number.
import { existsSync } from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { randomBytes } from 'node:crypto';
import { signBody, signStandard } from '../../domain-node/signature.js';
import { devSecretsFile, loadOrCreateDevSecrets } from '../dev/dev-secrets.js';

const { values } = parseArgs({
  options: {
    'approval-no': { type: 'string', default: `AP-${new Date().toISOString().slice(0, 10)}-${Date.now() % 100000}` },
    operation: { type: 'string', default: 'MAIN' },
    wait: { type: 'string' },
    'base-url': { type: 'string', default: `http://127.0.0.1:${process.env.PORT ?? 3000}` },
    scheme: { type: 'string', default: 'oa' },
    help: { type: 'boolean', default: false },
  },
});
if (values.help) {
  console.log(
    'usage: npm run sample -- [--approval-no AP-1] [--operation MAIN|SUPPLEMENT] [--wait SECONDS] [--base-url URL] [--scheme oa|standard]',
  );
  process.exit(0);
}
if (values.scheme !== 'oa' && values.scheme !== 'standard') {
  console.error('--scheme must be oa or standard');
  process.exit(2);
}

const dataDir = path.resolve(process.env.DATA_DIR ?? '.data');
let secret = process.env.WEBHOOK_SECRET;
if (!secret) {
  if (!existsSync(devSecretsFile(dataDir))) {
    console.error('no WEBHOOK_SECRET and no development secret yet: start the service with `npm run dev` first');
    process.exit(2);
  }
  secret = loadOrCreateDevSecrets(dataDir).webhookSecret;
}

const body = JSON.stringify({
  approvalNo: values['approval-no'],
  operation: values.operation,
  approvedAt: new Date().toISOString(),
  order: {
    customerId: 'CUST-0001',
    currency: 'CNY',
    lines: [
      { sku: 'SKU-APPLE', quantity: 3, unitPrice: '12.50' },
      { sku: 'SKU-PEAR', quantity: 1, unitPrice: '99.9' },
    ],
  },
});
const timestamp = String(Math.floor(Date.now() / 1000));
const messageId = `msg_${randomBytes(8).toString('hex')}`;
const signature: Record<string, string> =
  values.scheme === 'standard'
    ? {
        'webhook-id': messageId,
        'webhook-timestamp': timestamp,
        'webhook-signature': signStandard(secret, messageId, timestamp, body),
      }
    : { 'x-oa-timestamp': timestamp, 'x-oa-signature': signBody(secret, timestamp, body) };
const response = await fetch(`${values['base-url']}/webhooks/oa/approvals`, {
  method: 'POST',
  headers: {
    'content-type': 'application/json',
    ...signature,
    ...(values.wait ? { prefer: `wait=${values.wait}` } : {}),
  },
  body,
});
console.log(`${response.status} ${response.statusText}`);
const applied = response.headers.get('preference-applied');
if (applied) console.log(`Preference-Applied: ${applied}`);
console.log(JSON.stringify(await response.json(), null, 2));
process.exit(response.ok ? 0 : 1);

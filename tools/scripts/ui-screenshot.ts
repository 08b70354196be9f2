// `npm run ui:screenshot`: with `npm run dev` running, sends a sample approval, opens the Temporal
// Web UI in headless Chromium (Debian's `chromium`, never a downloaded browser), searches the
// workflow list by approval number, and saves what an operator sees — the list, the order's page
// with its activity summaries, and its summary and current details — as PNGs under docs/ui/.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { chromium } from 'playwright-core';

const { values } = parseArgs({
  options: {
    ui: { type: 'string', default: 'http://127.0.0.1:8233' },
    namespace: { type: 'string', default: 'default' },
    out: { type: 'string', default: 'docs/ui' },
    'approval-no': { type: 'string', default: `AP-UI-${Date.now() % 1_000_000}` },
    chromium: { type: 'string', default: '/usr/bin/chromium' },
    help: { type: 'boolean', default: false },
  },
});
if (values.help) {
  console.log(
    'usage: npm run ui:screenshot -- [--ui URL] [--namespace NS] [--out DIR] [--approval-no AP-1] [--chromium PATH]',
  );
  process.exit(0);
}
if (!existsSync(values.chromium)) {
  console.error(`no browser at ${values.chromium}: install Debian's chromium (apt-get install -y chromium)`);
  process.exit(2);
}

const approvalNo = values['approval-no'];
const sent = spawnSync(
  process.execPath,
  ['--import', 'tsx', 'tools/scripts/send-sample-approval.ts', '--approval-no', approvalNo],
  {
    stdio: 'inherit',
  },
);
if (sent.status !== 0) {
  console.error('the sample approval was not accepted: is `npm run dev` running?');
  process.exit(1);
}
const workflowId = `order-APPROVAL:${approvalNo}:MAIN`;
mkdirSync(values.out, { recursive: true });

const browser = await chromium.launch({
  executablePath: values.chromium,
  args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking'],
});
try {
  const page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
  const query = encodeURIComponent(`ApprovalNo = '${approvalNo}'`);
  // The list query an operator types, as the UI keeps it in the address.
  await page.goto(`${values.ui}/namespaces/${values.namespace}/workflows?query=${query}`);
  await page.getByText(workflowId).first().waitFor({ timeout: 30_000 });
  await page.screenshot({ path: `${values.out}/workflow-list.png` });
  console.log(`saved ${values.out}/workflow-list.png`);

  // The row's link leads to the order's page: summary, details, search attributes, history.
  const href = await page
    .locator(`a[href*="${encodeURIComponent(workflowId)}"]`)
    .first()
    .getAttribute('href');
  if (!href) throw new Error(`no link to ${workflowId} in the workflow list`);
  await page.goto(new URL(href, values.ui).toString());
  await page.getByText('SUBMITTED').first().waitFor({ timeout: 30_000 });
  await page.waitForTimeout(1_000);
  await page.screenshot({ path: `${values.out}/workflow-detail.png`, fullPage: false });
  console.log(`saved ${values.out}/workflow-detail.png`);

  // The summary and the current details the workflow keeps (static summary, status, order number).
  await page.getByText('User Metadata').first().click();
  await page.getByText('approval').first().waitFor({ timeout: 30_000 });
  await page.waitForTimeout(1_000);
  await page.screenshot({ path: `${values.out}/workflow-metadata.png` });
  console.log(`saved ${values.out}/workflow-metadata.png`);
} finally {
  await browser.close();
}

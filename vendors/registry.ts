// The OA vendors the service knows, one line each — the one list of them: whatever else needs "the
// vendors" (their settings, secrets and open-API addresses, the callback routes, the form mapping's
// sections, the metrics' series) asks here — and what the configured ones give the processes: the
// API's callback connectors, the worker's approval readers, and (vendors/connections.ts) the API's
// held connections. A vendor whose settings are absent gives nothing: its callback answers 404, its
// reader is missing.
import { isDoorName, ORDER_NAMING_DOORS } from '../domain/door.js';
import type { OaVendor } from '../domain/oa-approval.js';
import type { WritePolicy } from '../submission/settings.js';
import type { ApprovalReader } from './approval-reader.js';
import type { ApprovalReceiptPoster } from './approval-receipts.js';
import type { Connector } from './connector.js';
import type { DecisionCardSender } from './decision-cards.js';
import { dingtalk } from './dingtalk/index.js';
import { feishu } from './feishu/index.js';
import type { Clock } from './inbound.js';
import type { OaVendorModule } from './oa-vendor.js';
import { wecom } from './wecom/index.js';

const modules: OaVendorModule<unknown>[] = [feishu, dingtalk, wecom];

/**
 * Every vendor: a new one is its folder and its line in the list above (docs/connectors.md), or a
 * module `registerOaVendor` adds.
 */
export const OA_VENDOR_MODULES: readonly OaVendorModule<unknown>[] = modules;

/** The prefix of a vendor's variables: its id in capitals, `-` as `_` (`FEISHU_` for `feishu`). */
export function settingsPrefix(vendor: OaVendor): string {
  return `${vendor.toUpperCase().replaceAll('-', '_')}_`;
}

/**
 * Adds a vendor whose module lives outside this list: a test's own entry point adds one from its
 * fixture folder (test/integration/fourth-vendor.test.ts), before it loads the settings and builds
 * the app, which read the list each time. Refused: an id that is no door's name, is the webhook's
 * or MCP's or a vendor's already, and a variable not named with the vendor's prefix, so that no two
 * vendors can read one variable.
 */
export function registerOaVendor(module: OaVendorModule<unknown>): void {
  const { vendor } = module;
  if (!isDoorName(vendor) || ORDER_NAMING_DOORS.includes(vendor)) {
    throw new Error(`an OA vendor's id is a door of its own: ${JSON.stringify(vendor)} is not one`);
  }
  if (modules.some((known) => known.vendor === vendor))
    throw new Error(`the OA vendor ${vendor} is registered already`);
  const misnamed = Object.keys(module.settings.env).filter((name) => !name.startsWith(settingsPrefix(vendor)));
  if (misnamed.length > 0) {
    throw new Error(
      `the OA vendor ${vendor}'s variables are named ${settingsPrefix(vendor)}*: not ${misnamed.join(', ')}`,
    );
  }
  modules.push(module);
}

/**
 * The vendors that are on, by id, each with the configuration its module's `from` built: the part
 * of the connectors' configuration (vendors/settings.ts) the registry reads.
 */
export interface ConfiguredVendors {
  vendors: ReadonlyMap<OaVendor, unknown>;
}

/** Every vendor's id, in the registry's order. */
export function oaVendorIds(): OaVendor[] {
  return OA_VENDOR_MODULES.map((module) => module.vendor);
}

/** The module of `vendor`. */
export function oaVendorModule(vendor: OaVendor): OaVendorModule<unknown> {
  const module = OA_VENDOR_MODULES.find((candidate) => candidate.vendor === vendor);
  if (!module) throw new Error(`no module for the OA vendor ${vendor}`);
  return module;
}

/** Each configured vendor with its settings. */
export function configured(connectors: ConfiguredVendors): { module: OaVendorModule<unknown>; settings: unknown }[] {
  return OA_VENDOR_MODULES.flatMap((module) => {
    const settings = connectors.vendors.get(module.vendor);
    return settings === undefined ? [] : [{ module, settings }];
  });
}

/** Whether any vendor is configured: the API then starts the claims nobody started. */
export function anyOaVendorOn(connectors: ConfiguredVendors): boolean {
  return configured(connectors).length > 0;
}

/**
 * The callback connectors that are on. Every connector bounds its vendor's signed timestamp with
 * WEBHOOK_TOLERANCE_SECONDS, the window of the OA webhook too; `now` is the clock they read (a test
 * passes its own).
 */
export function connectorsFromConfig(
  config: { connectors: ConfiguredVendors; webhook: { toleranceSeconds: number } },
  now: Clock = Date.now,
): Partial<Record<OaVendor, Connector>> {
  const door = { toleranceSeconds: config.webhook.toleranceSeconds, now };
  const connectors: Partial<Record<OaVendor, Connector>> = {};
  for (const { module, settings } of configured(config.connectors)) {
    const connector = module.connector?.(settings, door);
    if (connector) connectors[module.vendor] = connector;
  }
  return connectors;
}

/**
 * One read may take four requests (a token, the read, a fresh token after a refusal, the read
 * again), all inside one activity attempt: each request gets a quarter of its start-to-close
 * timeout, so the attempt's own timeout never cuts a read the reader could still finish.
 */
export function readerRequestTimeoutMs(policy: Pick<WritePolicy, 'startToCloseMs'>): number {
  return Math.max(250, Math.floor(policy.startToCloseMs / 4));
}

/** The approval readers of the configured vendors, for the worker's `readApprovalForm` activity. */
export function readersFromConfig(
  connectors: ConfiguredVendors,
  policy: Pick<WritePolicy, 'startToCloseMs'>,
): Partial<Record<OaVendor, ApprovalReader>> {
  const timeoutMs = readerRequestTimeoutMs(policy);
  const readers: Partial<Record<OaVendor, ApprovalReader>> = {};
  for (const { module, settings } of configured(connectors))
    readers[module.vendor] = module.reader(settings, { timeoutMs });
  return readers;
}

/** Each request of a decision card's post or redraw: inside the card activities' 30 s attempts. */
const DECISION_CARD_REQUEST_TIMEOUT_MS = 10_000;

/** The decision card senders of the configured vendors whose settings name a chat for them. */
export function decisionCardSendersFromConfig(connectors: ConfiguredVendors): Map<OaVendor, DecisionCardSender> {
  const senders = new Map<OaVendor, DecisionCardSender>();
  for (const { module, settings } of configured(connectors)) {
    const sender = module.decisionCards?.(settings, { timeoutMs: DECISION_CARD_REQUEST_TIMEOUT_MS });
    if (sender) senders.set(module.vendor, sender);
  }
  return senders;
}

/** Each request of a receipt's look and post: inside the receipt activity's 30 s attempts. */
const RECEIPT_REQUEST_TIMEOUT_MS = 10_000;

/** The receipt posters of the configured vendors whose settings turn receipts on. */
export function receiptPostersFromConfig(connectors: ConfiguredVendors): Map<OaVendor, ApprovalReceiptPoster> {
  const posters = new Map<OaVendor, ApprovalReceiptPoster>();
  for (const { module, settings } of configured(connectors)) {
    const poster = module.receipts?.(settings, { timeoutMs: RECEIPT_REQUEST_TIMEOUT_MS });
    if (poster) posters.set(module.vendor, poster);
  }
  return posters;
}

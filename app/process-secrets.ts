// The secrets each deployed process reads, taken from the settings of the parts it runs: what its
// own Secret holds in deploy/kubernetes/ and nothing more, so a workload never holds a secret for
// another one's door (test/unit/deploy/manifests.test.ts holds the manifests to these lists).
// - The API verifies the webhook, the MCP tokens, the status token and the OA callbacks; it starts
//   workflows (Temporal) and claims keys (DATABASE_URL). It delivers nothing.
// - The worker writes orders (DATABASE_URL), runs on Temporal, signs and sends the events
//   (DOWNSTREAM_SECRET, AMQP_URL) and reads the approval forms from the OA vendors.
// - The migrate Job migrates as the owner (DATABASE_MIGRATION_URL) and reads nothing else.
// An OA vendor's connector is configured whole in each process that runs it (its settings all
// present turn it on: vendors/settings.ts), so the API and the worker both hold its secrets, as its
// settings.ts declares them.
// An API that hosts the worker (API_HOSTS_WORKER=1) reads both lists.
import { deliverySettings } from '../activities/settings.js';
import { httpSettings } from '../edges/http/settings.js';
import { mcpSettings } from '../edges/mcp/settings.js';
import { oaVendorSecretSettings } from '../vendors/settings.js';
import { brokerSettings } from '../services/broker/settings.js';
import { temporalSettings } from '../services/temporal/settings.js';
import { CREDENTIAL_URL_SETTINGS } from '../services/config/production-refusals.js';
import { secretSettingNames } from './env.js';

/** Every setting that is a secret, or a URL whose password is one. */
export const SECRET_NAMES: ReadonlySet<string> = new Set([...secretSettingNames(), ...CREDENTIAL_URL_SETTINGS]);

/** The secrets among the settings of the parts named. */
function secretsOf(...parts: Record<string, unknown>[]): string[] {
  return parts.flatMap((part) => Object.keys(part)).filter((name) => SECRET_NAMES.has(name));
}

/** By deployed process (the image's entry points): the secrets it reads. */
export const PROCESS_SECRETS = {
  api: ['DATABASE_URL', ...secretsOf(temporalSettings, httpSettings, mcpSettings), ...oaVendorSecretSettings()],
  worker: [
    'DATABASE_URL',
    ...secretsOf(temporalSettings, deliverySettings, brokerSettings),
    ...oaVendorSecretSettings(),
  ],
  migrate: ['DATABASE_MIGRATION_URL'],
} as const satisfies Record<string, readonly string[]>;

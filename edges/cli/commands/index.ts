// The operator commands of `orders-cli`, in the order its overview lists them; app/cli-main.ts
// hands them to edges/cli/run-cli.ts.
import { statusCommand } from './status.js';
import { listCommand } from './list.js';
import { awaitingCommand } from './awaiting.js';
import { clearConflictCommand } from './clear-conflict.js';
import { resubmitCommand } from './resubmit.js';
import { abandonCommand } from './abandon.js';
import { redeliverCommand } from './redeliver.js';
import { markHandledCommand } from './mark-handled.js';
import { recompensateCommand } from './recompensate.js';
import { scanDuplicatesCommand } from './scan-duplicates.js';
import { alertsCommand } from './alerts.js';
import { receiptsCommand } from './receipts.js';
import { purgeExpiredCommand } from './purge-expired.js';
import { buildsCommand } from './builds.js';
import { replayCommand } from './replay.js';
import { schemaStatusCommand } from './schema-status.js';
import type { Command } from './shared.js';

export const COMMANDS: Command[] = [
  statusCommand,
  listCommand,
  awaitingCommand,
  clearConflictCommand,
  resubmitCommand,
  abandonCommand,
  redeliverCommand,
  markHandledCommand,
  recompensateCommand,
  scanDuplicatesCommand,
  alertsCommand,
  receiptsCommand,
  purgeExpiredCommand,
  buildsCommand,
  replayCommand,
  schemaStatusCommand,
];

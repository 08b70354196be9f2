// The MCP stdio server (bin `orders-mcp`): a desktop agent launches it and speaks JSON-RPC over
// stdin/stdout. stdout carries protocol messages only — every log line goes to stderr. It starts
// no embedded service: DATABASE_URL and TEMPORAL_ADDRESS (or a Temporal profile) name the
// service's own — or, when none is set outside production, those of the running `npm run dev`
// stack, as for orders-cli — and the service's workers do the writing. It reads only the settings it uses (no
// webhook secret). It connects to Temporal lazily, so it starts (and answers "safe to call again")
// while Temporal is down. The SDK's stdio entry serves every revision: the connection's first
// message says which (an `initialize` of 2025-06-18 or 2025-11-25, or a request of 2026-07-28).
import { parseArgs } from 'node:util';
import { serveStdio } from '@modelcontextprotocol/server/stdio';
import { missingAddressReason } from '../services/config/dev-stack-file.js';
import { loadOperatorConfig } from './operator-config.js';
import { warnOfDeprecatedSettings } from '../services/temporal/settings.js';
import { requireSetting, runMain } from '../services/config/process.js';
import { prepareDatabase } from '../services/db/database-at-start.js';
import { createPrismaClientFromConfig } from '../services/db/prisma-client.js';
import { createLazyClient, temporalTargetFrom } from '../services/temporal/connection.js';
import { installTracing, shutdownTracing, tracingForLog } from '../services/telemetry/tracing.js';
import { mcpServerFactory, toolsFor } from '../edges/mcp/server.js';

const USAGE = `usage: orders-mcp [--operator-tools]

The MCP stdio server of exactly-once-orders. Reads DATABASE_URL, Temporal's connection settings
(TEMPORAL_ADDRESS, TEMPORAL_NAMESPACE, or a profile: TEMPORAL_CONFIG_FILE, TEMPORAL_PROFILE),
TEMPORAL_TASK_QUEUE and MCP_SUBMIT_WAIT_MS from the environment; with neither DATABASE_URL nor a
Temporal of its own set, it uses the running \`npm run dev\` stack.

  --operator-tools  also offer list_orders_awaiting_decision, decide_compensation and
                    decide_delivery (the same as MCP_OPERATOR_TOOLS=1)
  -h, --help        show this help`;

function parseFlags(): { operatorTools: boolean } {
  try {
    const { values } = parseArgs({
      options: { 'operator-tools': { type: 'boolean', default: false }, help: { type: 'boolean', short: 'h' } },
      strict: true,
    });
    if (values.help) {
      process.stderr.write(`${USAGE}\n`);
      process.exit(0);
    }
    return { operatorTools: values['operator-tools'] };
  } catch (error) {
    process.stderr.write(`${(error as Error).message}\n${USAGE}\n`);
    process.exit(2);
  }
}

const flags = parseFlags();

await runMain(
  'mcp',
  async (log) => {
    const config = loadOperatorConfig();
    warnOfDeprecatedSettings(config.temporal, (line) => log.warn(line));
    // Before the client exists: it takes its interceptors from it. Each tool call is a trace.
    if (installTracing(config.tracing, 'mcp'))
      log.info({ tracing: tracingForLog(config.tracing) }, 'OpenTelemetry traces exported');
    // With NODE_ENV=production a missing address says what to set: the dev stack's file is not read.
    const why = missingAddressReason(config);
    const databaseUrl = requireSetting('DATABASE_URL', config.databaseUrl, why);
    if (why) requireSetting('TEMPORAL_ADDRESS', config.temporal.address, why);
    const prisma = createPrismaClientFromConfig(config, databaseUrl);
    // It never migrates: a schema behind this build, or a key column that does not compare bytes,
    // stops it before it answers a tool call.
    await prepareDatabase({
      prisma,
      migrateWith: undefined,
      log,
    });
    const temporal = createLazyClient(temporalTargetFrom(config.temporal));
    // No token here: whoever can start the bin already has the operator's own access to the
    // database and Temporal. Its decisions are marked as taken over stdio.
    const operatorTools = flags.operatorTools || config.mcp.operatorTools;
    const tools = toolsFor({ config, prisma, temporal, log }, { operatorTools: operatorTools && 'mcp-stdio' });
    const connection = serveStdio(mcpServerFactory(tools), {
      onerror: (error) => log.warn({ err: error }, 'MCP stdio message refused'),
    });

    let stopping = false;
    const stop = async (reason: string) => {
      if (stopping) return;
      stopping = true;
      log.info({ reason }, 'stopping the MCP stdio server');
      await connection.close();
      await Promise.all([prisma.$disconnect(), temporal.connection.close(), shutdownTracing()]);
      process.exit(0);
    };
    // The client closes stdin to end the session; signals come from a supervisor.
    process.stdin.once('end', () => void stop('stdin closed'));
    process.once('SIGINT', () => void stop('SIGINT'));
    process.once('SIGTERM', () => void stop('SIGTERM'));

    log.info({ operatorTools, taskQueue: config.temporal.taskQueue }, 'MCP stdio server ready');
    // Serving goes on until stdin closes or a signal arrives (`stop`).
    return Promise.resolve();
  },
  'stderr',
);

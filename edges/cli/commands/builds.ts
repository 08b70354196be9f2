// `builds`: each build of the Worker Deployment, and the steps of a rollout — ramp a new build,
// make it current, wait until the old one is drained, retire it (docs/production.md, "Rolling out
// a release").
import { userInfo } from 'node:os';
import {
  BuildRoutingRefused,
  type BuildTarget,
  type DeploymentRuns,
  promoteBuild,
  rampBuild,
  type RoutingChange,
  retireBuild,
  runsByBuild,
  stillNeeded,
} from '../../../services/temporal/worker-deployment.js';
import type { CommandContext } from '../context.js';
import { table } from '../table.js';
import {
  type Command,
  type CommandResult,
  nonNegativeInteger,
  positiveInteger,
  UsageError,
  type Values,
} from './shared.js';

/** Who runs the command, for the server's record; a container's user may have no passwd entry. */
function whoRuns(): string {
  try {
    return userInfo().username;
  } catch {
    return `uid ${process.getuid?.() ?? 'unknown'}`;
  }
}

const ACTIONS = ['ramp', 'promote', 'drained', 'retire'] as const;
type Action = (typeof ACTIONS)[number];

/** Why the server may refuse to route to a build: none of its workers has polled yet. */
const NOT_POLLED_YET = 'Are its workers running? They register the build when they first poll.';

/** How often `drained --wait-seconds` asks again. */
const DRAINED_POLL_MS = 2_000;

function listing(name: string, runs: DeploymentRuns): CommandResult {
  return {
    ok: runs.builds.length > 0,
    data: runs,
    human:
      runs.builds.length === 0
        ? `no build of ${name} has polled yet`
        : table(
            ['BUILD', 'ROUTING', 'OPEN RUNS', 'PINNED', 'STOPPABLE'],
            runs.builds.map((build) => [
              build.buildId,
              build.routing === 'ramping' ? `ramping ${runs.rampingPercentage}%` : build.routing,
              build.openRuns,
              build.pinnedRuns,
              stillNeeded(runs, build.buildId).length === 0 ? 'yes' : 'no',
            ]),
          ),
  };
}

/** A refusal the server gave after the wait: exit 1, its words and what to do. */
function refused(action: Action, target: BuildTarget, error: unknown, hint: string): CommandResult {
  if (!(error instanceof BuildRoutingRefused)) throw error;
  const line = `${action} ${target.buildId}: the server refuses: ${error.message}`;
  return { ok: false, data: { action, buildId: target.buildId, refused: error.message }, human: `${line}\n${hint}` };
}

async function drained(context: CommandContext, target: BuildTarget, waitMs: number): Promise<CommandResult> {
  const client = await context.temporal();
  const deadline = Date.now() + waitMs;
  for (let told = false; ; told = true) {
    const runs = await runsByBuild(client, target.namespace, target.deploymentName);
    const reasons = stillNeeded(runs, target.buildId);
    if (reasons.length === 0 || Date.now() + DRAINED_POLL_MS > deadline) {
      return {
        ok: reasons.length === 0,
        data: { buildId: target.buildId, drained: reasons.length === 0, reasons, runs },
        human:
          reasons.length === 0
            ? `${target.buildId} is drained: its workers may stop`
            : `${target.buildId} is still needed: ${reasons.join('; ')}`,
      };
    }
    if (!told) context.progress(`waiting for ${target.buildId} to drain: ${reasons.join('; ')}`);
    await new Promise((resolve) => setTimeout(resolve, DRAINED_POLL_MS));
  }
}

/** Said after a routing change the server had not spread to every task queue partition by the wait's end. */
function spreading(change: RoutingChange): string {
  return change.routed
    ? ''
    : '; the server is still passing this on to its task queue partitions: for a moment, some new runs may go where they went before';
}

async function act(context: CommandContext, action: Action, target: BuildTarget, values: Values) {
  const client = await context.temporal();
  const waiting = {
    waitMs: nonNegativeInteger(values, 'wait-seconds', action === 'promote' || action === 'ramp' ? 60 : 0) * 1000,
    onWait: (reason: string) => context.progress(`${action} ${target.buildId}: waiting (${reason})`),
  };
  if (action === 'drained') return drained(context, target, waiting.waitMs);
  if (action === 'ramp') {
    if (values.percentage === undefined) throw new UsageError('ramp needs --percentage, 1 to 100');
    const percentage = positiveInteger(values, 'percentage', 0);
    if (percentage > 100) throw new UsageError('--percentage must be 1 to 100');
    let change;
    try {
      change = await rampBuild(client, target, percentage, waiting);
    } catch (error) {
      return refused(action, target, error, NOT_POLLED_YET);
    }
    return {
      ok: true,
      data: { action, buildId: target.buildId, percentage, routed: change.routed },
      human: `${target.buildId} ramping: ${percentage}% of new runs go there${spreading(change)}`,
    };
  }
  if (action === 'promote') {
    let change;
    try {
      change = await promoteBuild(client, target, waiting);
    } catch (error) {
      return refused(action, target, error, NOT_POLLED_YET);
    }
    return {
      ok: true,
      data: { action, buildId: target.buildId, routed: change.routed },
      human: `${target.buildId} is current: new runs, and waiting orders at their next step, go there${spreading(change)}`,
    };
  }
  // retire: our own check first, in words an operator acts on; then the server's.
  const reasons = stillNeeded(await runsByBuild(client, target.namespace, target.deploymentName), target.buildId);
  if (reasons.length > 0) {
    return {
      ok: false,
      data: { action, buildId: target.buildId, reasons },
      human: `${target.buildId} is still needed: ${reasons.join('; ')}. Keep its workers running.`,
    };
  }
  try {
    await retireBuild(client, target, waiting);
  } catch (error) {
    return refused(
      action,
      target,
      error,
      'Stop its workers first; the server counts a build as polled for a few minutes after its last worker went (--wait-seconds waits).',
    );
  }
  return { ok: true, data: { action, buildId: target.buildId }, human: `${target.buildId} retired` };
}

export const buildsCommand: Command = {
  name: 'builds',
  summary: 'the builds of the Worker Deployment, and the rollout steps: ramp, promote, drained, retire',
  usage: [
    '[ACTION BUILD] [--deployment-name NAME] [--percentage N] [--wait-seconds N]',
    '',
    'Without an action: each build, where new runs go, its open runs, how many are pinned to it, and',
    'whether its workers may stop. Exit code 1 when the deployment is unknown.',
    '',
    '  ramp BUILD --percentage N  send N% (1-100) of new runs to BUILD beside the current build',
    '  promote BUILD              make BUILD current; open auto-upgrading runs move at their next step',
    '  drained BUILD              exit 0 once BUILD is neither current nor ramping and no run is pinned',
    '                             to it (its workers may stop); exit 1 while it is still needed',
    '  retire BUILD               forget a drained BUILD whose workers have stopped',
    '',
    '--wait-seconds: how long to wait for the state asked for (ramp and promote: 60, for the',
    "build's first poll; drained and retire: 0, ask once). The deployment is TEMPORAL_DEPLOYMENT_NAME",
    'unless named.',
  ].join('\n'),
  options: {
    'deployment-name': { type: 'string' },
    percentage: { type: 'string' },
    'wait-seconds': { type: 'string' },
  },
  run: async (context, values, positionals) => {
    const name = values['deployment-name'] ?? context.config.worker.deployment?.deploymentName;
    if (typeof name !== 'string') throw new UsageError('give --deployment-name or set TEMPORAL_DEPLOYMENT_NAME');
    const [action, buildId, ...rest] = positionals;
    if (action === undefined) {
      return listing(name, await runsByBuild(await context.temporal(), context.config.temporal.namespace, name));
    }
    if (!(ACTIONS as readonly string[]).includes(action)) {
      throw new UsageError(`unknown action ${action}: one of ${ACTIONS.join(', ')}`);
    }
    if (!buildId || rest.length > 0) throw new UsageError(`${action} needs exactly one build id`);
    const target: BuildTarget = {
      namespace: context.config.temporal.namespace,
      deploymentName: name,
      buildId,
      identity: `orders-cli:${whoRuns()}`,
    };
    return act(context, action as Action, target, values);
  },
};

// What each build of a Worker Deployment still runs: the open workflow runs on it, and how many of
// those are pinned to it (they need that build's workers until they close). An operator reads this
// before stopping an old build (docs/production.md, "Rolling out a release").
import { type Client, isGrpcServiceError } from '@temporalio/client';

/** gRPC's NOT_FOUND. */
const NOT_FOUND = 5;
/** WORKER_DEPLOYMENT_VERSION_STATUS_DRAINING: no longer current or ramping, pinned runs maybe left. */
const VERSION_DRAINING = 4;
/** ROUTING_CONFIG_UPDATE_STATE_IN_PROGRESS: the new routing has not reached every task queue partition. */
const ROUTING_IN_PROGRESS = 1;

export interface BuildRuns {
  buildId: string;
  /** Where new runs go: `current`, `ramping` (a share of them), or neither. */
  routing: 'current' | 'ramping' | 'none';
  /** Open runs whose last workflow task ran on this build. */
  openRuns: number;
  /** Of those, the ones pinned to it: its workers may stop only once this is 0. */
  pinnedRuns: number;
  /**
   * The server still counts it as draining: a run pinned to it may not show in the counts yet
   * (visibility lags), so the server's own verdict is waited for too.
   */
  draining: boolean;
}

export interface DeploymentRuns {
  deploymentName: string;
  /** The share of new runs the ramping build gets, in percent; 0 without one. */
  rampingPercentage: number;
  builds: BuildRuns[];
}

/** A string inside a visibility query's double quotes. */
function quoted(value: string): string {
  return `"${value.replace(/\\/g, '\\\\').replace(/"/g, '\\"')}"`;
}

/**
 * The builds the deployment knows, newest first, with their open runs counted through the
 * visibility store (`temporal workflow count --query 'ExecutionStatus="Running" AND
 * TemporalWorkerDeploymentVersion="<name>:<build>"'` does the same). Counted one build at a time:
 * the server groups counts by ExecutionStatus only.
 */
export async function runsByBuild(client: Client, namespace: string, deploymentName: string): Promise<DeploymentRuns> {
  let info;
  try {
    ({ workerDeploymentInfo: info } = await client.workflowService.describeWorkerDeployment({
      namespace,
      deploymentName,
    }));
  } catch (error) {
    // No worker of the deployment has polled yet.
    if (isGrpcServiceError(error) && Number(error.code) === NOT_FOUND)
      return { deploymentName, rampingPercentage: 0, builds: [] };
    throw error;
  }
  const routing = info?.routingConfig;
  const versions = [...(info?.versionSummaries ?? [])].sort(
    (a, b) => Number(b.createTime?.seconds ?? 0) - Number(a.createTime?.seconds ?? 0),
  );
  const builds: BuildRuns[] = [];
  for (const summary of versions) {
    const buildId = summary.deploymentVersion?.buildId;
    if (!buildId) continue;
    const onBuild = `ExecutionStatus = "Running" AND TemporalWorkerDeploymentVersion = ${quoted(`${deploymentName}:${buildId}`)}`;
    const [open, pinned] = await Promise.all([
      client.workflow.count(onBuild),
      client.workflow.count(`${onBuild} AND TemporalWorkflowVersioningBehavior = "Pinned"`),
    ]);
    builds.push({
      buildId,
      routing:
        routing?.currentDeploymentVersion?.buildId === buildId
          ? 'current'
          : routing?.rampingDeploymentVersion?.buildId === buildId
            ? 'ramping'
            : 'none',
      openRuns: open.count,
      pinnedRuns: pinned.count,
      draining: Number(summary.status ?? 0) === VERSION_DRAINING,
    });
  }
  return { deploymentName, rampingPercentage: routing?.rampingVersionPercentage ?? 0, builds };
}

/** gRPC's FAILED_PRECONDITION: the server's "not yet" (no poller yet, still draining, pollers left). */
const FAILED_PRECONDITION = 9;

/** A routing change the server refused: why, in its words, and whether waiting can change it. */
export class BuildRoutingRefused extends Error {
  override name = 'BuildRoutingRefused';
}

export interface BuildTarget {
  namespace: string;
  deploymentName: string;
  buildId: string;
  /** Who asks, as the server records it. */
  identity: string;
}

export interface Waiting {
  /** How long to retry while the server says "not yet"; 0 asks once. */
  waitMs: number;
  /** Told once a retry begins, and why. */
  onWait?: (reason: string) => void;
  /** Between two asks. */
  intervalMs?: number;
}

/**
 * Asks until the server accepts, as long as it answers "not yet" (FAILED_PRECONDITION, or NOT_FOUND
 * for a build none of whose workers has polled) and the wait lasts. Anything else is thrown at once.
 */
async function untilAccepted(ask: () => Promise<unknown>, deadline: number, { onWait, intervalMs = 1_000 }: Waiting) {
  let told = false;
  for (;;) {
    try {
      await ask();
      return;
    } catch (error) {
      if (!isGrpcServiceError(error)) throw error;
      const code = Number(error.code);
      if (code !== FAILED_PRECONDITION && code !== NOT_FOUND) throw error;
      // The server's words, without gRPC's code in front.
      const reason = error.details || error.message;
      if (Date.now() + intervalMs > deadline) throw new BuildRoutingRefused(reason);
      if (!told) onWait?.(reason);
      told = true;
      await new Promise((resolve) => setTimeout(resolve, intervalMs));
    }
  }
}

/**
 * Whether an accepted routing change has reached every partition of the deployment's task queues,
 * asked until it has or the wait is over. Until then a new run may still go to the build that was
 * current before: the server accepts a change first and spreads it after.
 */
async function untilRouted(client: Client, target: BuildTarget, deadline: number, intervalMs = 200): Promise<boolean> {
  for (;;) {
    let workerDeploymentInfo;
    try {
      ({ workerDeploymentInfo } = await client.workflowService.describeWorkerDeployment({
        namespace: target.namespace,
        deploymentName: target.deploymentName,
      }));
    } catch {
      // The change is made; only whether it has spread is unknown: said as not spread yet.
      return false;
    }
    // Servers that do not report the state (UNSPECIFIED) route by the change as soon as they accept it.
    if (Number(workerDeploymentInfo?.routingConfigUpdateState ?? 0) !== ROUTING_IN_PROGRESS) return true;
    if (Date.now() + intervalMs > deadline) return false;
    await new Promise((resolve) => setTimeout(resolve, intervalMs));
  }
}

/** How a routing change ended: `routed` is false when the wait ended before every partition had it. */
export interface RoutingChange {
  routed: boolean;
}

/**
 * Sends `percentage` of new runs (and of auto-upgrading ones at their next task) to the build, and
 * waits, within `waiting`, until every task queue partition routes by it.
 */
export async function rampBuild(
  client: Client,
  target: BuildTarget,
  percentage: number,
  waiting: Waiting,
): Promise<RoutingChange> {
  const deadline = Date.now() + waiting.waitMs;
  await untilAccepted(
    () =>
      client.workflowService.setWorkerDeploymentRampingVersion({
        namespace: target.namespace,
        deploymentName: target.deploymentName,
        buildId: target.buildId,
        percentage,
        identity: target.identity,
      }),
    deadline,
    waiting,
  );
  return { routed: await untilRouted(client, target, deadline) };
}

/**
 * Makes the build current: every new run, and every auto-upgrading one at its next task, goes
 * there. Waits, within `waiting`, until every task queue partition routes by it.
 */
export async function promoteBuild(client: Client, target: BuildTarget, waiting: Waiting): Promise<RoutingChange> {
  const deadline = Date.now() + waiting.waitMs;
  await untilAccepted(
    () =>
      client.workflowService.setWorkerDeploymentCurrentVersion({
        namespace: target.namespace,
        deploymentName: target.deploymentName,
        buildId: target.buildId,
        identity: target.identity,
      }),
    deadline,
    waiting,
  );
  return { routed: await untilRouted(client, target, deadline) };
}

/** Why the build's workers may not stop yet, one reason a line; empty once they may. */
export function stillNeeded(runs: DeploymentRuns, buildId: string): string[] {
  const build = runs.builds.find((candidate) => candidate.buildId === buildId);
  if (!build) return [`${runs.deploymentName} has no build ${buildId}`];
  return [
    ...(build.routing === 'current' ? ['it is current: new runs go there'] : []),
    ...(build.routing === 'ramping' ? [`it is ramping: ${runs.rampingPercentage}% of new runs go there`] : []),
    ...(build.pinnedRuns > 0 ? [`${build.pinnedRuns} run(s) pinned to it are open`] : []),
    ...(build.pinnedRuns === 0 && build.draining ? ['the server does not count it drained yet'] : []),
  ];
}

/**
 * Forgets a build whose workers are gone. The server refuses while it counts the build as draining
 * or as polled lately (minutes, by its settings): `waiting` retries through that.
 */
export async function retireBuild(client: Client, target: BuildTarget, waiting: Waiting) {
  await untilAccepted(
    () =>
      client.workflowService.deleteWorkerDeploymentVersion({
        namespace: target.namespace,
        deploymentVersion: { deploymentName: target.deploymentName, buildId: target.buildId },
        identity: target.identity,
      }),
    Date.now() + waiting.waitMs,
    waiting,
  );
}

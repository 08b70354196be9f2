// What each build of a Worker Deployment still runs: the open workflow runs on it, and how many of
// those are pinned to it (they need that build's workers until they close). An operator reads this
// before stopping an old build (docs/production.md, "Rolling out a workflow change").
import { type Client, isGrpcServiceError } from '@temporalio/client';

/** gRPC's NOT_FOUND. */
const NOT_FOUND = 5;

export interface BuildRuns {
  buildId: string;
  /** Where new runs go: `current`, `ramping` (a share of them), or neither. */
  routing: 'current' | 'ramping' | 'none';
  /** Open runs whose last workflow task ran on this build. */
  openRuns: number;
  /** Of those, the ones pinned to it: its workers may stop only once this is 0. */
  pinnedRuns: number;
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
    });
  }
  return { deploymentName, rampingPercentage: routing?.rampingVersionPercentage ?? 0, builds };
}

// Makes a build of the workers current as the runbook does (docs/production.md, "Rolling out a
// release"; `orders-cli builds promote`), waiting until the build's workers have polled and so
// registered it. Until one is current, a versioned worker gets no task at all.
import { Client, Connection } from '@temporalio/client';
import { decodeVersioningBehavior } from '@temporalio/common';
import { promoteBuild } from '../../services/temporal/worker-deployment.js';

export async function makeBuildCurrent(
  address: string,
  version: { deploymentName: string; buildId: string },
  timeoutMs = 60_000,
  namespace = 'default',
): Promise<void> {
  const connection = await Connection.connect({ address });
  try {
    const client = new Client({ connection, namespace });
    await promoteBuild(
      client,
      { namespace, ...version, identity: 'test-harness' },
      { waitMs: timeoutMs, intervalMs: 250 },
    );
  } finally {
    await connection.close();
  }
}

/** Where a run stands: its status, and the build and behaviour the server records for it. */
export async function versioningOf(temporal: Client, workflowId: string) {
  const description = await temporal.workflow.getHandle(workflowId).describe();
  const info = description.raw.workflowExecutionInfo?.versioningInfo;
  return {
    status: description.status.name,
    buildId: info?.deploymentVersion?.buildId ?? undefined,
    behaviour: decodeVersioningBehavior(info?.behavior),
  };
}

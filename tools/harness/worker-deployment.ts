// Makes a build of the workers current as the runbook does (docs/production.md, "Rolling out a
// workflow change"): through the Temporal CLI, retried until the build's workers have polled and so
// registered it. Until one is current, a versioned worker gets no task at all.
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import type { Client } from '@temporalio/client';
import { decodeVersioningBehavior } from '@temporalio/common';
import { temporalBinary } from './temporal-dev-server.js';
import { sleep } from './time.js';

const run = promisify(execFile);

export async function makeBuildCurrent(
  address: string,
  version: { deploymentName: string; buildId: string },
  timeoutMs = 60_000,
): Promise<void> {
  const args = ['worker', 'deployment', 'set-current-version', '--address', address, '--yes'];
  args.push('--deployment-name', version.deploymentName, '--build-id', version.buildId);
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      await run(temporalBinary(), args);
      return;
    } catch (error) {
      if (Date.now() > deadline) throw error;
      await sleep(250);
    }
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

// `builds`: each build of the Worker Deployment, and whether its workers can be stopped.
import { runsByBuild } from '../../../services/temporal/worker-deployment.js';
import { table } from '../table.js';
import { type Command, UsageError } from './shared.js';

export const buildsCommand: Command = {
  name: 'builds',
  summary: 'each build of the Worker Deployment: where new runs go, its open runs, how many are pinned to it',
  usage:
    '[--deployment-name NAME]\n\nThe deployment is TEMPORAL_DEPLOYMENT_NAME unless named. A build that is not current and has\nno pinned runs left can have its workers stopped. Exit code 1 when the deployment is unknown.',
  options: { 'deployment-name': { type: 'string' } },
  run: async (context, values) => {
    const name = values['deployment-name'] ?? context.config.worker.deployment?.deploymentName;
    if (typeof name !== 'string') throw new UsageError('give --deployment-name or set TEMPORAL_DEPLOYMENT_NAME');
    const runs = await runsByBuild(await context.temporal(), context.config.temporal.namespace, name);
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
                build.routing === 'none' && build.pinnedRuns === 0 ? 'yes' : 'no',
              ]),
            ),
    };
  },
};

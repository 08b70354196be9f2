// Replays recorded workflow histories against the current workflow code: a change that would not
// replay (a non-deterministic change without patching) fails here instead of on running workflows.
// Used by the replay test (recorded fixtures) and by the operator CLI (a file or a workflow id).
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import type { Client } from '@temporalio/client';
import { historyFromJSON } from '@temporalio/common/lib/proto-utils.js';
import type { temporal } from '@temporalio/proto';
import { Worker } from '@temporalio/worker';
import { tracingOn } from '../services/telemetry/tracing.js';
import { type WorkflowCode, workflowCode } from './workflow-bundle.js';

type History = temporal.api.history.v1.IHistory;

export interface HistoryToReplay {
  /** A name for reports: the file or the workflow id. */
  name: string;
  history: History;
}

export interface ReplayOutcome {
  name: string;
  ok: boolean;
  /** Why it did not replay: the determinism violation or replay error. */
  error?: string;
}

/** A history as exported by `temporal workflow show --output json`, the Web UI, or the recorder. */
export async function historyFromFile(file: string): Promise<HistoryToReplay> {
  const json: unknown = JSON.parse(await readFile(file, 'utf8'));
  return { name: path.basename(file), history: historyFromJSON(json) };
}

export async function historyFromServer(client: Client, workflowId: string, runId?: string): Promise<HistoryToReplay> {
  const history = await client.workflow.getHandle(workflowId, runId).fetchHistory();
  return { name: runId ? `${workflowId} (${runId})` : workflowId, history };
}

/**
 * `bundleDir`: replay against these prebuilt bundles (WORKFLOW_BUNDLE_DIR), as the worker would run
 * them; `workflows`: against this code instead (the next build's, before it is deployed).
 */
export async function replayHistories(
  histories: HistoryToReplay[],
  options: {
    onResult?: (outcome: ReplayOutcome) => void;
    bundleDir?: string | undefined;
    workflows?: WorkflowCode;
  } = {},
): Promise<ReplayOutcome[]> {
  const { onResult, bundleDir } = options;
  const outcomes: ReplayOutcome[] = [];
  const workflowBundle = options.workflows ?? (await workflowCode({ traced: tracingOn(), dir: bundleDir }));
  const results = Worker.runReplayHistories(
    { workflowBundle, replayName: 'orders-replay' },
    histories.map(({ name, history }) => ({ workflowId: name, history })),
  );
  for await (const result of results) {
    const outcome: ReplayOutcome = result.error
      ? { name: result.workflowId, ok: false, error: result.error.message }
      : { name: result.workflowId, ok: true };
    outcomes.push(outcome);
    onResult?.(outcome);
  }
  return outcomes;
}

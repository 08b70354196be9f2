// `replay`: replays workflow histories against the current workflow code.
import { historyFromFile, historyFromServer, replayHistories } from '../../../worker/replay.js';
import { type Command, UsageError } from './shared.js';

export const replayCommand: Command = {
  name: 'replay',
  summary: 'replay workflow histories (files, or a workflow id) against the current workflow code',
  usage:
    '<history.json>... | --workflow-id ID [--run-id RUN]\n\nFiles as exported by `temporal workflow show --output json` or the Web UI. Exit code 1\nwhen any history does not replay (a change that needs patched()).',
  options: { 'workflow-id': { type: 'string' }, 'run-id': { type: 'string' } },
  run: async (context, values, positionals) => {
    const workflowId = values['workflow-id'];
    if ((typeof workflowId === 'string') === positionals.length > 0) {
      throw new UsageError('give history files or --workflow-id, not both');
    }
    const histories =
      typeof workflowId === 'string'
        ? [
            await historyFromServer(
              await context.temporal(),
              workflowId,
              typeof values['run-id'] === 'string' ? values['run-id'] : undefined,
            ),
          ]
        : await Promise.all(positionals.map((file) => historyFromFile(file)));
    let done = 0;
    const outcomes = await replayHistories(histories, {
      bundleDir: context.config.worker.bundleDir,
      onResult: (outcome) =>
        context.progress(`[${++done}/${histories.length}] ${outcome.ok ? 'ok  ' : 'FAIL'} ${outcome.name}`),
    });
    const failed = outcomes.filter((outcome) => !outcome.ok);
    return {
      ok: failed.length === 0,
      data: outcomes,
      human:
        failed.length === 0
          ? `${outcomes.length} history(ies) replay against the current code`
          : failed.map((outcome) => `${outcome.name}: ${outcome.error}`).join('\n'),
    };
  },
};

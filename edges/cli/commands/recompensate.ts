// `recompensate`: runs compensation again for a key whose compensation ended.
import { recompensate } from '../../../submission/operator-decisions/compensation.js';
import { by, type Command, decidedBy, KEY_USAGE, keyArgument, keyOptions, operatorDeps } from './shared.js';

export const recompensateCommand: Command = {
  name: 'recompensate',
  summary: 're-run compensation for a key whose compensation ended (FAILED, COMPENSATED); idempotent',
  usage:
    `${KEY_USAGE} [--by NAME]` +
    '\n\nA key already waiting is left alone; an abandoned key stays abandoned; a key whose order\nlanded is continued. Then decide with `resubmit` or `abandon`.',
  options: { ...by, ...keyOptions },
  run: async (context, values, positionals) => {
    const key = keyArgument(positionals, values);
    const decider = decidedBy(values);
    const result = await recompensate(await operatorDeps(context), { idempotencyKey: key, decidedBy: decider });
    return {
      ok: true,
      data: result,
      human: result.started
        ? `compensation started again for ${key} (was ${result.previousStatus}): ${result.workflowId}`
        : `${key} is already in compensation (${result.workflowId}); nothing started`,
    };
  },
};

// How the operator's decision commands are built: `resubmit` and `abandon` decide a compensation,
// `redeliver` and `mark-handled` a failed delivery; each takes a key and --by, and answers once the
// decision was carried out.
import { DECIDED_BY_MAX_LENGTH } from '../../../domain/decided-by.js';
import { resubmit } from '../../../submission/operator-decisions/claims.js';
import { decideCompensation } from '../../../submission/operator-decisions/compensation.js';
import { decideDelivery } from '../../../submission/operator-decisions/delivery.js';
import { by, type Command, decidedBy, KEY_USAGE, keyArgument, keyOptions, operatorDeps } from './shared.js';

export function decision(name: 'resubmit' | 'abandon', summary: string, more: string): Command {
  return {
    name,
    summary,
    usage: `${KEY_USAGE} [--by NAME]\n\nDelivered to compensation-<key> as the \`decide\` update; answers once it was carried out.${more}\nNAME (at most ${DECIDED_BY_MAX_LENGTH} characters) is recorded with the decision (default: cli:<user>).`,
    options: { ...by, ...keyOptions },
    run: async (context, values, positionals) => {
      const key = keyArgument(positionals, values);
      const request = { idempotencyKey: key, decidedBy: decidedBy(values) };
      const result =
        name === 'resubmit'
          ? await resubmit(await operatorDeps(context), request)
          : await decideCompensation(await context.temporal(), { ...request, decision: name });
      return {
        ok: true,
        data: result,
        human: `${name}: ${key} is now ${result.status}${result.outcome ? ` (${result.outcome})` : ''}`,
      };
    },
  };
}

export function deliveryDecision(name: 'redeliver' | 'mark-handled', summary: string, more: string): Command {
  return {
    name,
    summary,
    usage: `${KEY_USAGE} [--by NAME]\n\nOnly for a DELIVERY_FAILED key. While order-<key> waits for a decision, delivered to it as the\n\`decide\` update; after its window closed, carried out by delivery-<key>. Answers once done.${more}\nNAME (at most ${DECIDED_BY_MAX_LENGTH} characters) is recorded with the decision (default: cli:<user>).`,
    options: { ...by, ...keyOptions },
    run: async (context, values, positionals) => {
      const key = keyArgument(positionals, values);
      const decider = decidedBy(values);
      const result = await decideDelivery(await operatorDeps(context), {
        idempotencyKey: key,
        decision: name,
        decidedBy: decider,
      });
      return {
        // A redelivery the downstream or the broker refused again is a failure: the key still waits.
        ok: result.status === 'DELIVERED',
        data: result,
        human: `${name}: ${key} is now ${result.status}${result.outcome ? ` (${result.outcome})` : ''}`,
      };
    },
  };
}

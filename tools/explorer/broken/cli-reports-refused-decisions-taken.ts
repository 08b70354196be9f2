// `orders-cli` with `resubmit` and `abandon` broken on purpose: a decision the key's compensation
// refused — another door (a card, the MCP tools, another operator) decided its wait first — is
// reported as taken, so two operators are each told their opposite decision stands. The explorer
// runs it for `--broken-rule refused-decision-reported-taken`; every other command, and every
// decision the workflow takes, is the product's (edges/cli/commands/).
import { COMMANDS } from '../../../edges/cli/commands/index.js';
import type { Command } from '../../../edges/cli/commands/shared.js';
import { runCli } from '../../../edges/cli/run-cli.js';
import { loadOperatorConfig } from '../../../app/operator-config.js';
import { NoPendingDecisionError } from '../../../submission/operator-decisions/shared.js';

function reportingRefusalsTaken(decision: Command): Command {
  return {
    ...decision,
    run: async (context, values, positionals) => {
      try {
        return await decision.run(context, values, positionals);
      } catch (error) {
        if (!(error instanceof NoPendingDecisionError)) throw error;
        return { ok: true, data: { status: 'COMPENSATING' }, human: `${decision.name}: taken` };
      }
    },
  };
}

await runCli(
  COMMANDS.map((command) =>
    command.name === 'resubmit' || command.name === 'abandon' ? reportingRefusalsTaken(command) : command,
  ),
  () => loadOperatorConfig(),
);

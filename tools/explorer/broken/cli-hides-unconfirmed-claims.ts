// `orders-cli` with `awaiting` broken on purpose: it leaves out the claims whose start was never
// confirmed (RECEIVED), so nobody is told about a key that no workflow looks after. The explorer
// runs it for `--broken-rule awaiting-hides-unconfirmed-claims`; every other command, and what
// `awaiting` lists otherwise, is the product's (edges/cli/commands/).
import { awaitingResult } from '../../../edges/cli/commands/awaiting.js';
import { COMMANDS } from '../../../edges/cli/commands/index.js';
import type { Command } from '../../../edges/cli/commands/shared.js';
import { runCli } from '../../../edges/cli/run-cli.js';
import { loadOperatorConfig } from '../../../app/operator-config.js';
import type { AwaitingDecision } from '../../../submission/operator-decisions/awaiting.js';

function hidingUnconfirmedClaims(awaiting: Command): Command {
  return {
    ...awaiting,
    run: async (context, values, positionals) => {
      const listed = (await awaiting.run(context, values, positionals)).data as AwaitingDecision[];
      return awaitingResult(listed.filter((row) => row.status !== 'RECEIVED'));
    },
  };
}

await runCli(
  COMMANDS.map((command) => (command.name === 'awaiting' ? hidingUnconfirmedClaims(command) : command)),
  () => loadOperatorConfig(),
);

// `orders-cli`: the operator's command line. Human output by default, `--json` for scripts;
// `--help` on every command; exit 0 ok, 1 failure (a refusal, a finding, an unreachable
// dependency), 2 usage error. Reads the same environment as the service, or — when neither
// DATABASE_URL nor a Temporal of its own (an address or a profile) is set, outside production —
// the running `npm run dev` stack.
import { COMMANDS } from '../edges/cli/commands/index.js';
import { runCli } from '../edges/cli/run-cli.js';
import { loadOperatorConfig } from './operator-config.js';

await runCli(COMMANDS, () => loadOperatorConfig());

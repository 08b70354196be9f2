// The import and environment rules of the house (docs/architecture.md, "The map of the root" and
// "The import rules lint enforces") are lint rules; this runs the project's own ESLint configuration
// on small snippets linted as if they were an existing file of the folder the rule covers, so
// removing or loosening a rule fails here, not in a review. The rules of the house read imports and
// names, not types: the type-aware rules are left to `npm run lint`, which spares this file building
// the whole project's types first.
import assert from 'node:assert/strict';
import path from 'node:path';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { ESLint } from 'eslint';
import tseslint from 'typescript-eslint';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const eslint = new ESLint({ cwd: ROOT, overrideConfig: tseslint.configs.disableTypeChecked });

/** The messages of the rule `ruleId` for `code` linted as if it lived at `file`. */
async function violations(file: string, code: string, ruleId: string): Promise<string[]> {
  const [result] = await eslint.lintText(code, { filePath: path.join(ROOT, file) });
  assert.ok(result, `ESLint linted ${file}`);
  const fatal = result.messages.find((message) => message.fatal);
  assert.equal(fatal, undefined, `ESLint parsed the snippet as ${file}`);
  return result.messages.filter((message) => message.ruleId === ruleId).map((message) => message.message);
}

const IMPORTS = 'no-restricted-imports';
const ENV = 'no-restricted-properties';

/** The floors, lowest first, each with a file of every folder on it (test/ stands above them all). */
const FLOORS: Record<string, string>[] = [
  { domain: 'domain/money.ts' },
  { 'domain-node': 'domain-node/fingerprint.ts', workflows: 'workflows/delivery-workflow.ts' },
  { services: 'services/db/retention.ts' },
  { submission: 'submission/wait-for-outcome.ts' },
  { vendors: 'vendors/feishu/reader.ts' },
  { activities: 'activities/activity-failure.ts' },
  { worker: 'worker/run-worker.ts' },
  { edges: 'edges/cli/table.ts' },
  { app: 'app/env.ts' },
  { tools: 'tools/chaos/prng.ts' },
  { test: 'test/unit/house-rules.test.ts' },
];

/** A snippet of `file` importing a module of the root folder `folder`. */
function importing(file: string, folder: string, kind: 'value' | 'type' = 'value'): string {
  const from = path.posix.relative(path.posix.dirname(file), `${folder}/some-module.js`);
  return kind === 'value'
    ? `import { x } from '${from}';\nexport const y = x;\n`
    : `import type { X } from '${from}';\nexport type Y = X;\n`;
}

describe('house rules', () => {
  it('lets every folder import the floors below its own and refuses every floor above it', async () => {
    const folders = FLOORS.flatMap((floor, level) =>
      Object.entries(floor).map(([folder, file]) => ({ folder, file, level })),
    );
    for (const { folder, file, level } of folders.filter((entry) => entry.folder !== 'test')) {
      for (const other of folders.filter((entry) => entry.folder !== folder)) {
        const found = await violations(file, importing(file, other.folder), IMPORTS);
        // On one floor: only workflow code's refusal of the Node-only folder.
        const refused = other.level > level || (folder === 'workflows' && other.folder === 'domain-node');
        assert.equal(found.length, refused ? 1 : 0, `${folder}/ importing ${other.folder}/: ${found.join(' / ')}`);
        if (other.level > level)
          assert.match(found[0] ?? '', new RegExp(` ${other.folder}/ stands on a floor above ${folder}/: `));
      }
    }
  });

  it('lets app/ be imported by tools/ and tests only', async () => {
    for (const file of ['tools/chaos/prng.ts', 'test/unit/house-rules.test.ts']) {
      assert.deepEqual(await violations(file, importing(file, 'app'), IMPORTS), [], file);
    }
    for (const file of [
      'edges/cli/table.ts',
      'worker/run-worker.ts',
      'services/db/retention.ts',
      'examples/consumer/main.ts',
    ]) {
      for (const kind of ['value', 'type'] as const) {
        const found = await violations(file, importing(file, 'app', kind), IMPORTS);
        assert.equal(found.length, 1, `${file}, ${kind} import`);
        assert.match(found[0] ?? '', /only tools\/ and tests import the composition root/);
      }
    }
  });

  it('lets the reference consumers import services/ and below, and nothing above', async () => {
    const file = 'examples/consumer/main.ts';
    for (const folder of ['domain', 'domain-node', 'services']) {
      assert.deepEqual(await violations(file, importing(file, folder), IMPORTS), [], folder);
    }
    for (const folder of ['submission', 'vendors', 'activities', 'worker', 'edges', 'app', 'tools', 'test']) {
      assert.equal((await violations(file, importing(file, folder), IMPORTS)).length, 1, folder);
    }
  });

  it('refuses a workflow file that imports the Node-only domain folder', async () => {
    const found = await violations(
      'workflows/delivery-workflow.ts',
      "import { fingerprintOf } from '../domain-node/fingerprint.js';\nexport const f = fingerprintOf;\n",
      IMPORTS,
    );
    assert.equal(found.length, 1);
    assert.match(found[0] ?? '', /domain-node\/ needs Node built-ins/);
  });

  it('refuses Node built-ins and I/O in domain/, which workflow code imports', async () => {
    const found = await violations(
      'domain/money.ts',
      "import { createHash } from 'node:crypto';\nimport { migrate } from '../services/db/migrate.js';\nexport const x = [createHash, migrate];\n",
      IMPORTS,
    );
    assert.equal(found.length, 2);
  });

  it('lets a workflow file import domain/ and activities as types', async () => {
    const found = await violations(
      'workflows/delivery-workflow.ts',
      "import { ORDER_STATUSES } from '../domain/order-status.js';\nimport type * as activities from '../activities/index.js';\nexport type A = typeof activities;\nexport const s = ORDER_STATUSES;\n",
      IMPORTS,
    );
    assert.deepEqual(found, []);
  });

  it("refuses process.env outside services/config, app/'s settings and the reference consumers', and allows it there", async () => {
    const code = 'export const level = process.env.LOG_LEVEL;\n';
    for (const file of [
      'edges/cli/table.ts',
      'activities/activity-failure.ts',
      'services/db/retention.ts',
      'examples/consumer/main.ts',
    ]) {
      const found = await violations(file, code, ENV);
      assert.equal(found.length, 1, `${file} may not read process.env`);
      assert.match(found[0] ?? '', /Only services\/config and app\/env.ts read the environment/);
    }
    assert.deepEqual(await violations('services/config/process.ts', code, ENV), []);
    for (const file of ['app/env.ts', 'app/operator-config.ts', 'examples/consumer/consumer-config.ts']) {
      assert.deepEqual(await violations(file, code, ENV), [], `${file} reads the environment`);
    }
  });

  it('refuses product code that imports a tool or a test, and tools that import tests', async () => {
    const product = await violations(
      'submission/wait-for-outcome.ts',
      "import { freePort } from '../tools/harness/ports.js';\nexport const p = freePort;\n",
      IMPORTS,
    );
    assert.equal(product.length, 1);
    assert.match(product[0] ?? '', /tools import the product, not the other way/);
    const tool = await violations(
      'tools/chaos/prng.ts',
      "import { FIXTURE } from '../../test/integration/fixture.js';\nexport const s = FIXTURE;\n",
      IMPORTS,
    );
    assert.equal(tool.length, 1);
    assert.match(tool[0] ?? '', /only tests import a test/);
  });

  it('refuses the start path or a vendor that imports an edge', async () => {
    for (const file of ['submission/wait-for-outcome.ts', 'vendors/feishu/reader.ts']) {
      const found = await violations(
        file,
        `import { problem } from '${file.startsWith('vendors') ? '../..' : '..'}/edges/http/problem.js';\nexport const p = problem;\n`,
        IMPORTS,
      );
      assert.equal(found.length, 1, file);
      assert.match(found[0] ?? '', /what serves every edge knows none of them/);
    }
  });

  it('keeps the arrows one way: vendors import the start path, the start path imports plumbing', async () => {
    const plumbing = await violations(
      'services/db/retention.ts',
      "import { submitApproval } from '../../submission/submit-approval.js';\nimport { createFeishuReader } from '../../vendors/feishu/reader.js';\nexport const p = [submitApproval, createFeishuReader];\n",
      IMPORTS,
    );
    assert.equal(plumbing.length, 2);
    assert.match(plumbing[0] ?? '', /services\/ is plumbing/);
    const heart = await violations(
      'submission/wait-for-outcome.ts',
      "import { createFeishuReader } from '../vendors/feishu/reader.js';\nexport const r = createFeishuReader;\n",
      IMPORTS,
    );
    assert.equal(heart.length, 1);
    assert.match(heart[0] ?? '', /the start path knows no vendor/);
    const vendor = await violations(
      'vendors/feishu/long-connection.ts',
      "import { settledWithin } from '../../submission/accept-oa-event.js';\nexport const s = settledWithin;\n",
      IMPORTS,
    );
    assert.deepEqual(vendor, []);
  });

  it('lets app/ compose the settings of every part, and services/config import none of them', async () => {
    const composing =
      "import { httpSettings } from '../edges/http/settings.js';\nimport { writePolicySettings } from '../submission/settings.js';\nimport { connectorSettings } from '../vendors/settings.js';\nimport { feishuSettings } from '../vendors/feishu/settings.js';\nexport const s = [httpSettings, writePolicySettings, connectorSettings, feishuSettings];\n";
    assert.deepEqual(await violations('app/env.ts', composing, IMPORTS), []);
    const below = await violations('services/config/environment.ts', composing.replaceAll("'../", "'../../"), IMPORTS);
    assert.equal(below.length, 4, 'services/config imports no settings module of a part above it');
    assert.match(below[0] ?? '', /what serves every edge knows none of them/);
    assert.match(below[1] ?? '', /services\/ is plumbing/);
  });

  it('refuses a service that imports an edge', async () => {
    const found = await violations(
      'services/db/retention.ts',
      "import { problem } from '../../edges/http/problem.js';\nexport const p = problem;\n",
      IMPORTS,
    );
    assert.equal(found.length, 1);
    assert.match(found[0] ?? '', /what serves every edge knows none of them/);
  });

  it('lets the MCP edge import its own tools folder, which is not the root tools/', async () => {
    const found = await violations(
      'edges/mcp/server.ts',
      "import { getOrderStatusTool } from './tools/get-order-status.js';\nexport const t = getOrderStatusTool;\n",
      IMPORTS,
    );
    assert.deepEqual(found, []);
  });
});

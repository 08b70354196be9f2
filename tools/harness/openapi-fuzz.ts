// schemathesis against the running API: the API as a process of its own (app/api-main.ts) with
// a worker in the test process, on the test run's Temporal and PostgreSQL. schemathesis reads the
// served document, generates requests from it (valid and invalid), signs the webhook's
// (tools/harness/schemathesis_hooks.py) and checks every answer against the document.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { OPENAPI_PATH } from '../../edges/http/openapi.js';
import { type ApiProcess, apiProcess, processEnv } from './processes.js';
import { startTestService, type TestService } from './service.js';
import { TEST_WEBHOOK_SECRET } from './signed-webhook.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const SCHEMATHESIS = path.join(ROOT, '.venv', 'bin', 'schemathesis');
const MCP_TEST_TOKEN = 'test-mcp-token-0123456789abcdef';

/** What the document promises and what every answer is checked for. */
const CHECKS = [
  'not_a_server_error',
  'status_code_conformance',
  'content_type_conformance',
  'response_headers_conformance',
  'response_schema_conformance',
  'client_errors_are_problem_json',
];

export interface FuzzBudget {
  /** Examples per operation and phase. */
  maxExamples: number;
  /**
   * Seconds for the whole schemathesis run, which then draws new fuzzing cases until they are spent
   * (`maxExamples` no longer bounds it); undefined: the run ends once each operation had its examples.
   */
  maxSeconds?: number;
  /** A fixed seed repeats a run; without one every run draws new inputs. */
  seed?: number;
}

export interface FuzzRun {
  exitCode: number;
  output: string;
  seconds: number;
}

async function runSchemathesis(apiUrl: string, budget: FuzzBudget, reportDir: string): Promise<FuzzRun> {
  const args = [
    'run',
    `${apiUrl}${OPENAPI_PATH}`,
    '--url',
    apiUrl,
    '--checks',
    CHECKS.join(','),
    '--phases',
    'examples,coverage,fuzzing',
    '--max-examples',
    String(budget.maxExamples),
    ...(budget.maxSeconds === undefined ? [] : ['--max-time', String(budget.maxSeconds)]),
    '--header',
    `Authorization: Bearer ${MCP_TEST_TOKEN}`,
    '--request-timeout',
    '30',
    '--continue-on-failure',
    '--no-color',
    '--report',
    'junit',
    '--report-junit-path',
    path.join(reportDir, 'junit.xml'),
    ...(budget.seed === undefined ? [] : ['--seed', String(budget.seed)]),
  ];
  const started = Date.now();
  const child = spawn(SCHEMATHESIS, args, {
    // Its example database and cache land in the run's own folder, not in the work tree.
    cwd: reportDir,
    env: {
      ...process.env,
      SCHEMATHESIS_HOOKS: 'schemathesis_hooks',
      PYTHONPATH: path.join(ROOT, 'tools', 'harness'),
      WEBHOOK_SECRET: TEST_WEBHOOK_SECRET,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')));
  child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')));
  const exitCode = await new Promise<number>((resolve) => {
    child.once('error', () => resolve(127));
    child.once('exit', (code, signal) => resolve(code ?? (signal ? 1 : 0)));
  });
  return { exitCode, output, seconds: (Date.now() - started) / 1000 };
}

/** One fuzzing run of the whole API within `budget`; fails on any finding. */
export function describeOpenApiFuzz(title: string, budget: FuzzBudget): void {
  describe(title, () => {
    let service: TestService;
    let api: ApiProcess;
    let reportDir: string;

    before(async () => {
      service = await startTestService();
      api = await apiProcess('api', processEnv(service.config, { MCP_TOKEN: MCP_TEST_TOKEN }));
      await api.start();
      reportDir = mkdtempSync(path.join(os.tmpdir(), 'openapi-fuzz-'));
    });
    after(async () => {
      await api?.kill('SIGKILL');
      await service?.stop();
      if (reportDir) rmSync(reportDir, { recursive: true, force: true });
    });

    it('answers every generated request as the OpenAPI document says, never with a 5xx', async () => {
      const run = await runSchemathesis(api.url, budget, reportDir);
      console.log(run.output.split('\n').slice(-25).join('\n'));
      console.log(`schemathesis ran ${run.seconds.toFixed(1)} s`);
      assert.notEqual(run.exitCode, 127, `${SCHEMATHESIS} is missing: run npm ci`);
      assert.equal(run.exitCode, 0, `schemathesis found problems:\n${run.output}`);
      // The webhook, the point of the service, was among the operations tested.
      const junit = readFileSync(path.join(reportDir, 'junit.xml'), 'utf8');
      assert.match(junit, /POST \/webhooks\/oa\/approvals/, `the webhook was not tested:\n${junit}`);
    });
  });
}

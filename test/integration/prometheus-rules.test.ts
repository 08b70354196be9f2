// The alert and recording rules under deploy/prometheus/ as Prometheus itself reads them: promtool
// (Debian's `prometheus` package, which `npm test` installs when it runs as root) checks them and
// runs their unit tests; and every alert has a test where it fires and one where it stays silent,
// so an alert added without both fails here. Every alert has a severity the runbook explains and an
// absolute runbook link to its own section, all under one base; the committed files are what
// `npm run deploy:alerts` writes, another base changes the links and nothing else, and the
// PrometheusRule carries the rules file's groups. The dashboard's queries are checked beside it: a
// recording rule it reads must be one the rules record.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { parse, stringify } from 'yaml';
import {
  dashboardQueries,
  PROMETHEUS_RULE_FILE,
  RULES_FILE,
  RULES_TEST_FILE,
  rules,
} from '../../tools/harness/deploy-queries.js';
import { metricNamesIn } from '../../tools/harness/promql-names.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const GENERATOR = path.join(ROOT, 'tools/scripts/write-alert-rules.mjs');
const RUNBOOK = path.join(ROOT, 'docs/operations.md');
/** The files the generator reads or writes, as paths from the repository's root. */
const GENERATED = [RULES_FILE, RULES_TEST_FILE, PROMETHEUS_RULE_FILE].map((file) => path.relative(ROOT, file));
const SEVERITIES = ['page', 'ticket', 'warning'];

function promtool(...args: string[]): { status: number | null; output: string } {
  const result = spawnSync('promtool', args, { encoding: 'utf8' });
  if (result.error) throw new Error(`promtool: ${result.error.message} (apt-get install prometheus brings it)`);
  return { status: result.status, output: `${result.stdout}${result.stderr}` };
}

interface AlertTest {
  alertname: string;
  exp_alerts?: unknown[];
}

/** A promtool unit-test file, as far as these tests read it. */
interface RulesTests {
  tests: { alert_rule_test?: AlertTest[] }[];
}

/** `node tools/scripts/write-alert-rules.mjs …`, with RUNBOOK_BASE_URL as given (unset by default). */
function generator(args: string[], runbookBase?: string): { status: number | null; output: string } {
  const { RUNBOOK_BASE_URL: _unset, ...env } = process.env;
  const result = spawnSync(process.execPath, [GENERATOR, ...args], {
    encoding: 'utf8',
    env: runbookBase === undefined ? env : { ...env, RUNBOOK_BASE_URL: runbookBase },
  });
  return { status: result.status, output: `${result.stdout}${result.stderr}` };
}

/** GitHub's anchors of the runbook's headings: lower case, without punctuation, spaces as hyphens. */
function runbookAnchors(): Set<string> {
  const headings = readFileSync(RUNBOOK, 'utf8')
    .replace(/^```[\s\S]*?^```/gm, '')
    .matchAll(/^#+ (.+)$/gm);
  return new Set([...headings].map(([, heading]) => anchorOf(heading ?? '')));
}

function anchorOf(heading: string): string {
  return heading
    .toLowerCase()
    .replace(/[^\w\- ]/g, '')
    .replace(/ /g, '-');
}

/** The one base every alert's runbook link shares, as the committed rules carry it. */
function runbookBase(): string {
  const bases = new Set(
    rules()
      .filter((rule) => rule.alert)
      .map((rule) => (rule.annotations?.runbook_url ?? '').replace(/#.*$/, '')),
  );
  assert.equal(bases.size, 1, `one base for every runbook link: ${[...bases].join(', ')}`);
  return [...bases][0] ?? '';
}

describe('Prometheus rules', () => {
  it('are valid rules for promtool', () => {
    const checked = promtool('check', 'rules', RULES_FILE);
    assert.equal(checked.status, 0, checked.output);
    assert.match(checked.output, /SUCCESS/);
  });

  it('pass their unit tests', () => {
    const tested = promtool('test', 'rules', RULES_TEST_FILE);
    assert.equal(tested.status, 0, tested.output);
    assert.match(tested.output, /SUCCESS/);
  });

  it('have, for every alert, a unit test where it fires and one where it stays silent', () => {
    const alerts = rules()
      .map((rule) => rule.alert)
      .filter((name): name is string => name !== undefined);
    assert.ok(alerts.length >= 8, `the alerts: ${alerts.join(', ')}`);
    const suite = parse(readFileSync(RULES_TEST_FILE, 'utf8')) as RulesTests;
    const cases = suite.tests.flatMap((test) => test.alert_rule_test ?? []);
    const uncovered = alerts.flatMap((alert) => {
      const ofAlert = cases.filter((test) => test.alertname === alert);
      return [
        ...(ofAlert.some((test) => (test.exp_alerts ?? []).length > 0) ? [] : [`${alert} never fires`]),
        ...(ofAlert.some((test) => (test.exp_alerts ?? []).length === 0) ? [] : [`${alert} is never silent`]),
      ];
    });
    assert.deepEqual(uncovered, [], 'in orders.rules.test.yml');
    const unknown = cases.map((test) => test.alertname).filter((name) => !alerts.includes(name));
    assert.deepEqual(unknown, [], 'tests of alerts the rules do not have');
  });

  it('give every alert a summary, a description and an absolute https runbook link to its own section, all under one base', () => {
    const anchors = runbookAnchors();
    const base = runbookBase();
    assert.match(base, /^https:\/\/[^/]/, 'the runbook base is an absolute https URL');
    for (const rule of rules().filter((candidate) => candidate.alert)) {
      const { summary, description, runbook_url: runbook = '' } = rule.annotations ?? {};
      assert.ok(summary && description, `${rule.alert}: summary and description`);
      const url = new URL(runbook);
      assert.equal(`${url.protocol}//${url.host}${url.pathname}${url.search}`, base, `${rule.alert}: ${runbook}`);
      const anchor = url.hash.slice(1);
      assert.ok(anchors.has(anchor), `${rule.alert}: runbook_url ${runbook} names a heading of operations.md`);
      assert.equal(anchor, anchorOf(rule.alert ?? ''), `${rule.alert}: its runbook section is headed by its name`);
    }
  });

  it('give every alert a severity of page, ticket or warning, as the runbook’s table says', () => {
    const severities: Record<string, string | undefined> = {};
    for (const rule of rules()) if (rule.alert) severities[rule.alert] = rule.labels?.severity;
    for (const [alert, severity] of Object.entries(severities)) {
      assert.ok(SEVERITIES.includes(severity ?? ''), `${alert}: severity ${severity}`);
    }
    const table: Record<string, string | undefined> = {};
    for (const [, alert, severity] of readFileSync(RUNBOOK, 'utf8').matchAll(/^\| `(Orders\w+)` +\| `(\w+)` +\|$/gm)) {
      table[alert ?? ''] = severity;
    }
    assert.deepEqual(table, severities, 'the alerts and severities of docs/operations.md, "Runbook"');
  });

  it('are what `npm run deploy:alerts` writes', () => {
    // With the base the committed links carry: a copy that serves its runbook elsewhere passes too.
    const checked = generator(['--check'], runbookBase());
    assert.equal(checked.status, 0, checked.output);
  });

  it('take another runbook base from --runbook-base-url or RUNBOOK_BASE_URL, and change the runbook links and nothing else', (t) => {
    const copy = mkdtempSync(path.join(tmpdir(), 'alert-rules-'));
    t.after(() => rmSync(copy, { recursive: true, force: true }));
    for (const file of [...GENERATED, path.relative(ROOT, RUNBOOK)]) {
      mkdirSync(path.dirname(path.join(copy, file)), { recursive: true });
      cpSync(path.join(ROOT, file), path.join(copy, file));
    }
    const [before, other] = [runbookBase(), 'https://wiki.example.org/orders/runbook'];
    const written = generator(['--root', copy, '--runbook-base-url', other]);
    assert.equal(written.status, 0, written.output);

    for (const file of GENERATED) {
      const [was, is] = [path.join(ROOT, file), path.join(copy, file)].map((at) =>
        readFileSync(at, 'utf8').split('\n'),
      );
      assert.equal(is?.length, was?.length, `${file}: as many lines`);
      const changed = (was ?? []).flatMap((line, at) => (line === is?.[at] ? [] : [[line, is?.[at] ?? '']]));
      assert.ok(changed.length >= 8, `${file}: its runbook links changed (${changed.length} lines)`);
      for (const [line, now] of changed) {
        const [, indent, anchor] = /^(\s*)runbook_url: (?:\S+)#([\w-]+)$/.exec(line ?? '') ?? [];
        assert.ok(anchor !== undefined, `${file}: a line other than a runbook link changed: ${line}`);
        assert.equal(now, `${indent}runbook_url: ${other}#${anchor}`, `${file}: ${line}`);
        assert.ok(line?.includes(`${before}#`), `${file}: ${line} was under ${before}`);
      }
      // And no link was left behind: a link the rules and the tests no longer share is one of these.
      const left = (is ?? []).filter((line) => /^\s*runbook_url: /.test(line) && line.includes(`${before}#`));
      assert.deepEqual(left, [], `${file}: runbook links still under ${before}`);
    }
    // A rewritten test where an alert fires still passes against the rewritten rules: promtool
    // compares the link the rules give with the link the test expects. One such test is enough
    // (the whole suite takes promtool seconds of CPU): the original files pass together, and every
    // link in both moved to the new base with its anchor as before (checked above).
    const rewrittenTests = path.join(copy, path.relative(ROOT, RULES_TEST_FILE));
    const suite = parse(readFileSync(rewrittenTests, 'utf8')) as RulesTests;
    const firing = suite.tests.find((test) =>
      (test.alert_rule_test ?? []).some((alertTest) => JSON.stringify(alertTest.exp_alerts ?? []).includes(other)),
    );
    assert.ok(firing, 'a rewritten test expects an alert with a link under the new base');
    const oneTest = path.join(path.dirname(rewrittenTests), 'one-firing.test.yml');
    writeFileSync(oneTest, stringify({ ...suite, tests: [firing] }));
    const tested = promtool('test', 'rules', oneTest);
    assert.equal(tested.status, 0, tested.output);
    assert.match(tested.output, /SUCCESS/);
    // RUNBOOK_BASE_URL names the same base; --check finds the copy written with it, and not with another.
    assert.equal(generator(['--root', copy, '--check'], other).status, 0, 'RUNBOOK_BASE_URL');
    const stale = generator(['--root', copy, '--check'], before);
    assert.equal(stale.status, 1, stale.output);
    for (const file of GENERATED) assert.ok(stale.output.includes(file), `--check names ${file}: ${stale.output}`);
    // A base that is not an absolute https URL is a usage error, and nothing is written.
    for (const refused of ['http://wiki.example.org/orders', 'docs/operations.md', `${other}#runbook`]) {
      const answer = generator(['--root', copy, '--runbook-base-url', refused]);
      assert.equal(answer.status, 2, `${refused}: ${answer.output}`);
    }
    assert.equal(generator(['--root', copy, '--check'], other).status, 0, 'the refused bases wrote nothing');
  });

  it('give the PrometheusRule exactly the rules file’s groups', () => {
    const manifest = parse(readFileSync(PROMETHEUS_RULE_FILE, 'utf8')) as {
      apiVersion: string;
      kind: string;
      metadata: { name: string; labels: Record<string, string> };
      spec: { groups: unknown[] };
    };
    assert.deepEqual(
      [manifest.apiVersion, manifest.kind, manifest.metadata.name, manifest.metadata.labels],
      ['monitoring.coreos.com/v1', 'PrometheusRule', 'orders', { 'app.kubernetes.io/name': 'orders' }],
    );
    const { groups } = parse(readFileSync(RULES_FILE, 'utf8')) as { groups: unknown[] };
    assert.deepEqual(manifest.spec.groups, groups);
  });

  it('record every recording rule the dashboard reads', () => {
    const recorded = new Set(rules().flatMap((rule) => (rule.record ? [rule.record] : [])));
    const missing = dashboardQueries().flatMap(({ panel, expr }) =>
      metricNamesIn(expr)
        .filter((name) => name.includes(':') && !recorded.has(name))
        .map((name) => `${name} (panel "${panel}")`),
    );
    assert.deepEqual(missing, []);
  });
});

// The alert and recording rules under deploy/prometheus/ as Prometheus itself reads them: promtool
// (Debian's `prometheus` package, which `npm test` installs when it runs as root) checks them and
// runs their unit tests; and every alert has a test where it fires and one where it stays silent,
// so an alert added without both fails here. The dashboard's queries are checked beside it: a
// recording rule it reads must be one the rules record.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { parse } from 'yaml';
import { dashboardQueries, RULES_FILE, RULES_TEST_FILE, rules } from '../../tools/harness/deploy-queries.js';
import { metricNamesIn } from '../../tools/harness/promql-names.js';

function promtool(...args: string[]): { status: number | null; output: string } {
  const result = spawnSync('promtool', args, { encoding: 'utf8' });
  if (result.error) throw new Error(`promtool: ${result.error.message} (apt-get install prometheus brings it)`);
  return { status: result.status, output: `${result.stdout}${result.stderr}` };
}

interface AlertTest {
  alertname: string;
  exp_alerts?: unknown[];
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
    const suite = parse(readFileSync(RULES_TEST_FILE, 'utf8')) as { tests: { alert_rule_test?: AlertTest[] }[] };
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

  it('give every alert a summary, a description and a runbook section that exists', () => {
    const operations = readFileSync(new URL('../../docs/operations.md', import.meta.url), 'utf8');
    // GitHub's anchors: a heading in lower case, without punctuation.
    const anchors = new Set(
      [...operations.matchAll(/^#+ (.+)$/gm)].map(([, heading]) =>
        (heading ?? '')
          .toLowerCase()
          .replace(/[^\w\- ]/g, '')
          .replace(/ /g, '-'),
      ),
    );
    for (const rule of rules().filter((candidate) => candidate.alert)) {
      const { summary, description, runbook_url: runbook } = rule.annotations ?? {};
      assert.ok(summary && description, `${rule.alert}: summary and description`);
      const anchor = /^docs\/operations\.md#(.+)$/.exec(runbook ?? '')?.[1];
      assert.ok(
        anchor && anchors.has(anchor),
        `${rule.alert}: runbook_url ${runbook} names a section of operations.md`,
      );
    }
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

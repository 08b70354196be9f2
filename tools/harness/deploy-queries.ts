// The Prometheus rules and the Grafana dashboard under deploy/, as the tests read them: the rules'
// alerts and records with their expressions, and every query of the dashboard's panels.
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { parse } from 'yaml';

export const RULES_FILE = fileURLToPath(new URL('../../deploy/prometheus/orders.rules.yml', import.meta.url));
export const RULES_TEST_FILE = fileURLToPath(new URL('../../deploy/prometheus/orders.rules.test.yml', import.meta.url));
/** The rules' groups for the Prometheus Operator, written from RULES_FILE by `npm run deploy:alerts`. */
export const PROMETHEUS_RULE_FILE = fileURLToPath(
  new URL('../../deploy/kubernetes/prometheus-operator/prometheus-rule.yaml', import.meta.url),
);
export const DASHBOARD_FILE = fileURLToPath(new URL('../../deploy/grafana/orders.json', import.meta.url));

export interface Rule {
  alert?: string;
  record?: string;
  expr: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
}

export function rules(file = RULES_FILE): Rule[] {
  const parsed = parse(readFileSync(file, 'utf8')) as { groups: { rules: Rule[] }[] };
  return parsed.groups.flatMap((group) => group.rules);
}

interface Panel {
  title?: string;
  targets?: { expr?: string }[];
  panels?: Panel[];
}

/** Each query of the dashboard, with the title of its panel. */
export function dashboardQueries(file = DASHBOARD_FILE): { panel: string; expr: string }[] {
  const dashboard = JSON.parse(readFileSync(file, 'utf8')) as { panels: Panel[] };
  const queries: { panel: string; expr: string }[] = [];
  const visit = (panel: Panel) => {
    for (const target of panel.targets ?? []) {
      if (target.expr) queries.push({ panel: panel.title ?? '(untitled)', expr: target.expr });
    }
    panel.panels?.forEach(visit);
  };
  dashboard.panels.forEach(visit);
  return queries;
}

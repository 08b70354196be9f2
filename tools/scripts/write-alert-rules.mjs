// The alert rules' runbook links from one setting, and the same rules for the Prometheus Operator
// (`npm run deploy:alerts`). Every alert's `runbook_url` in deploy/prometheus/orders.rules.yml, and
// the one its unit tests expect in orders.rules.test.yml, becomes `<base>#<anchor>`: the base from
// --runbook-base-url, else RUNBOOK_BASE_URL, else the RUNBOOK_BASE_URL of the settings in
// deploy/kubernetes/kustomization.yaml (the one the cluster's PrometheusRule gets), else a
// placeholder a team replaces (as it replaces the image's registry.example.com); the anchor is GitHub's of the alert's own section in
// docs/operations.md. Only those values change: each is spliced in at the place the parser found
// it, so the files' comments and layout stay as written. deploy/kubernetes/prometheus-operator/prometheus-rule.yaml is
// then a PrometheusRule whose spec.groups are the rules file's groups, comments included.
//
//   node tools/scripts/write-alert-rules.mjs [--runbook-base-url URL] [--check] [--root DIR]
//
// --check writes nothing and exits 1, naming each file, when a file differs from what it would
// write; --root reads and writes another copy of the repository's layout. Exit 2: a usage error.
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath, URL } from 'node:url';
import { isDeepStrictEqual, parseArgs } from 'node:util';
import { isMap, isScalar, isSeq, parse, parseDocument } from 'yaml';

const DEFAULT_BASE_URL = 'https://runbooks.example.com/exactly-once-orders/operations';
const RUNBOOK = 'docs/operations.md';
const RULES = 'deploy/prometheus/orders.rules.yml';
const RULES_TESTS = 'deploy/prometheus/orders.rules.test.yml';
const PROMETHEUS_RULE = 'deploy/kubernetes/prometheus-operator/prometheus-rule.yaml';
const KUSTOMIZATION = 'deploy/kubernetes/kustomization.yaml';
const SETTINGS = 'orders-deploy-settings';

const USAGE = 'usage: write-alert-rules.mjs [--runbook-base-url URL] [--check] [--root DIR]';

function usageError(message) {
  console.error(`write-alert-rules: ${message}\n${USAGE}`);
  process.exit(2);
}

let options;
try {
  ({ values: options } = parseArgs({
    options: {
      'runbook-base-url': { type: 'string' },
      check: { type: 'boolean', default: false },
      root: { type: 'string' },
    },
  }));
} catch (error) {
  usageError(error instanceof Error ? error.message : String(error));
}

const root = path.resolve(options.root ?? path.join(path.dirname(fileURLToPath(import.meta.url)), '../..'));
const base = options['runbook-base-url'] ?? (process.env.RUNBOOK_BASE_URL || kustomizationBase() || DEFAULT_BASE_URL);
checkBase(base);

/** RUNBOOK_BASE_URL of the kustomization's settings, when the layout read has them. */
function kustomizationBase() {
  const file = path.join(root, KUSTOMIZATION);
  if (!existsSync(file)) return undefined;
  const generators = parse(readFileSync(file, 'utf8'))?.configMapGenerator ?? [];
  const literals = generators.find((generator) => generator?.name === SETTINGS)?.literals ?? [];
  const literal = literals.find((entry) => typeof entry === 'string' && entry.startsWith('RUNBOOK_BASE_URL='));
  return literal?.slice('RUNBOOK_BASE_URL='.length) || undefined;
}

/** An alert receiver opens the link as it stands: absolute, https, and with no anchor of its own. */
function checkBase(url) {
  let parsed;
  try {
    parsed = new URL(url);
  } catch {
    usageError(`the runbook base URL is not an absolute URL: ${url}`);
  }
  if (parsed.protocol !== 'https:') usageError(`the runbook base URL is not https: ${url}`);
  if (url.includes('#')) usageError(`the runbook base URL has an anchor already: ${url}`);
  if (/\s/.test(url)) usageError(`the runbook base URL has white space: ${url}`);
}

const read = (file) => readFileSync(path.join(root, file), 'utf8');

/** GitHub's anchor of a heading: lower case, punctuation dropped, spaces as hyphens. */
function anchorOf(heading) {
  return heading
    .trim()
    .toLowerCase()
    .replace(/[^\w\- ]/g, '')
    .replace(/ /g, '-');
}

/** Each heading's text, outside fenced code (where `# …` is a shell comment, not a heading). */
function headings(markdown) {
  const found = [];
  let fenced = false;
  for (const line of markdown.split('\n')) {
    if (/^\s*(```|~~~)/.test(line)) fenced = !fenced;
    const heading = fenced ? undefined : /^#{1,6} (.+)$/.exec(line)?.[1];
    if (heading !== undefined) found.push(heading.trim());
  }
  return found;
}

const sections = new Set(headings(read(RUNBOOK)));
/** The runbook link of an alert: its section is headed by its name. */
function runbookUrl(alert) {
  if (!sections.has(alert)) {
    console.error(`write-alert-rules: ${RUNBOOK} has no section headed "${alert}": write its runbook first`);
    process.exit(1);
  }
  return `${base}#${anchorOf(alert)}`;
}

/** The URL as a YAML scalar: plain when it reads back as itself, double-quoted otherwise. */
function scalarText(url) {
  return parse(`value: ${url}`)?.value === url ? url : JSON.stringify(url);
}

/**
 * `text` with each given scalar node's source replaced by the new value, at the offsets the parser
 * found it: nothing else of the text moves.
 */
function spliced(text, replacements) {
  let result = text;
  for (const { node, value } of [...replacements].sort((a, b) => b.node.range[0] - a.node.range[0])) {
    const [start, end] = node.range;
    result = `${result.slice(0, start)}${scalarText(value)}${result.slice(end)}`;
  }
  return result;
}

const items = (node) => (isSeq(node) ? node.items.filter(isMap) : []);

/** A parsed YAML file, refused with its errors: a file the parser misread must not be rewritten. */
function documentOf(file, text) {
  const document = parseDocument(text);
  if (document.errors.length > 0) {
    console.error(`write-alert-rules: ${file}: ${document.errors.map((error) => error.message).join('; ')}`);
    process.exit(1);
  }
  return document;
}

/** The runbook_url scalar of an annotations map, which must be there to be rewritten. */
function runbookNode(annotations, where) {
  const node = isMap(annotations) ? annotations.get('runbook_url', true) : undefined;
  if (!isScalar(node)) {
    console.error(`write-alert-rules: ${where} has no runbook_url to write`);
    process.exit(1);
  }
  return node;
}

/** The rules file with every alert's runbook link written. */
function rulesText() {
  const text = read(RULES);
  const document = documentOf(RULES, text);
  const replacements = items(document.get('groups', true)).flatMap((group) =>
    items(group.get('rules', true)).flatMap((rule) => {
      const alert = rule.get('alert');
      if (typeof alert !== 'string') return [];
      const node = runbookNode(rule.get('annotations', true), `${RULES}, alert ${alert}`);
      return [{ node, value: runbookUrl(alert) }];
    }),
  );
  return spliced(text, replacements);
}

/** The unit tests with the runbook link each expected alert carries written. */
function rulesTestsText() {
  const text = read(RULES_TESTS);
  const document = documentOf(RULES_TESTS, text);
  const replacements = items(document.get('tests', true)).flatMap((test) =>
    items(test.get('alert_rule_test', true)).flatMap((check) => {
      const alert = check.get('alertname');
      return items(check.get('exp_alerts', true)).map((expected) => ({
        node: runbookNode(expected.get('exp_annotations', true), `${RULES_TESTS}, a test of ${alert}`),
        value: runbookUrl(alert),
      }));
    }),
  );
  return spliced(text, replacements);
}

/**
 * The PrometheusRule: the rules file's `groups:` block as written, indented under `spec:`. Moving a
 * block-style YAML block right keeps its meaning; the parse below holds the result to it.
 */
function prometheusRuleText(rules) {
  const lines = rules.split('\n');
  const start = lines.indexOf('groups:');
  const parsed = parse(rules);
  if (start < 0 || !isDeepStrictEqual(Object.keys(parsed ?? {}), ['groups'])) {
    console.error(`write-alert-rules: ${RULES} is expected to hold a top-level \`groups:\` and nothing else`);
    process.exit(1);
  }
  const groups = lines
    .slice(start + 1)
    .map((line) => (line === '' ? line : `  ${line}`))
    .join('\n');
  const text = `# The alert and recording rules of deploy/prometheus/orders.rules.yml for the Prometheus Operator,
# written by \`npm run deploy:alerts\` (tools/scripts/write-alert-rules.mjs): edit the rules file and
# run it, never this file. The Operator's Prometheus loads it when its ruleSelector selects it: the
# label yours selects on, and the runbook links' base, are set in ../kustomization.yaml. The rules
# expect the jobs \`orders-api\` and \`orders-worker\`, which a PodMonitor with
# \`jobLabel: app.kubernetes.io/name\` gives the pods of api.yaml and worker.yaml.
apiVersion: monitoring.coreos.com/v1
kind: PrometheusRule
metadata:
  name: orders
  labels:
    app.kubernetes.io/name: orders
spec:
  groups:
${groups}`;
  if (!isDeepStrictEqual(parse(text).spec.groups, parsed.groups)) {
    console.error(`write-alert-rules: the groups of ${RULES} did not carry over to ${PROMETHEUS_RULE} unchanged`);
    process.exit(1);
  }
  return text;
}

const rules = rulesText();
const written = new Map([
  [RULES, rules],
  [RULES_TESTS, rulesTestsText()],
  [PROMETHEUS_RULE, prometheusRuleText(rules)],
]);

const stale = [...written].filter(([file, text]) => !existsSync(path.join(root, file)) || read(file) !== text);
if (options.check) {
  for (const [file] of stale) {
    console.error(`write-alert-rules: ${file} is not what \`npm run deploy:alerts\` writes (runbook base ${base})`);
  }
  process.exit(stale.length > 0 ? 1 : 0);
}
for (const [file, text] of stale) {
  mkdirSync(path.dirname(path.join(root, file)), { recursive: true });
  writeFileSync(path.join(root, file), text);
}
console.log(
  `alert rules: runbook links under ${base}; ${stale.length > 0 ? `wrote ${stale.map(([file]) => file).join(', ')}` : 'every file was up to date'}`,
);

// The metric names a PromQL expression reads, for the checks that the rules and the dashboard under
// deploy/ query only what the service exports. A reasonable reading, not a parser: string
// literals, label matchers, range and offset durations and grouping clauses are cut out, and what
// remains is an identifier that is not a function, a keyword or a Grafana variable.

const KEYWORDS = new Set([
  'by',
  'without',
  'on',
  'ignoring',
  'group_left',
  'group_right',
  'and',
  'or',
  'unless',
  'bool',
  'offset',
  'atan2',
  'inf',
  'nan',
]);

/** Names read by `expr`, in order of appearance, each once; `up` and recording rules included. */
export function metricNamesIn(expr: string): string[] {
  const stripped = expr
    .replace(/"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|`[^`]*`/g, '""') // string literals
    .replace(/\{[^}]*\}/g, ' ') // label matchers
    .replace(/\[[^\]]*\]/g, ' ') // ranges and subqueries
    .replace(/\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)/g, ' ') // grouping labels
    .replace(/\$\{?\w+\}?/g, ' '); // Grafana variables ($__rate_interval, ${datasource})
  const names: string[] = [];
  for (const match of stripped.matchAll(/(?<![\w.])([a-zA-Z_:][a-zA-Z0-9_:]*)(\s*\()?/g)) {
    const [, name, call] = match;
    if (!name || call || KEYWORDS.has(name.toLowerCase())) continue;
    if (!names.includes(name)) names.push(name);
  }
  return names;
}

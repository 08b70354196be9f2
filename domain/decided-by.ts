// Who took an operator decision, as recorded with it in `compensation_record.decided_by
// VARCHAR(128)`. Every entry point that takes the name (the CLI's --by, the MCP operator tool's
// decidedBy) checks it against this bound, so a decision never fails at the write for its name.
// A decision taken through MCP is recorded with the door it came through before the name the
// caller gave (`mcp-operator:alice`): the name is the caller's word, the door is what the server
// checked (docs/architecture.md, decision 39).

/** The column's length, in characters as PostgreSQL counts them (code points, not UTF-16 units). */
export const DECIDED_BY_MAX_LENGTH = 128;

/**
 * The doors that mark their decisions: `/mcp` with MCP_OPERATOR_TOKEN, and the `orders-mcp` stdio
 * bin, run under the account of the operator who started it. The CLI records `--by` as given.
 */
export const DECISION_DOORS = ['mcp-operator', 'mcp-stdio'] as const;
export type DecisionDoor = (typeof DECISION_DOORS)[number];

/** The longest name a marking door takes: its mark, a colon and the name fit the column. */
export const MARKED_DECIDED_BY_MAX_LENGTH =
  DECIDED_BY_MAX_LENGTH - Math.max(...DECISION_DOORS.map((door) => door.length)) - 1;

/** What is recorded for a decision `name` took through `door`. */
export function decidedThrough(door: DecisionDoor, name: string): string {
  return `${door}:${name}`;
}

/** Why `name` cannot be recorded as the one who decided; undefined when it can. */
export function decidedByProblem(name: string): string | undefined {
  if (name.trim() === '') return 'must name who decided, e.g. --by alice';
  const length = [...name].length;
  if (length > DECIDED_BY_MAX_LENGTH) {
    return `must be at most ${DECIDED_BY_MAX_LENGTH} characters (the decision record stores no more); got ${length}`;
  }
  return undefined;
}

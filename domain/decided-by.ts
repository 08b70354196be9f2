// Who took an operator decision, as recorded with it in `compensation_record.decided_by
// VARCHAR(128)`. Every entry point that takes the name (the CLI's --by, the MCP operator tool's
// decidedBy) checks it against this bound, so a decision never fails at the write for its name.

/** The column's length, in characters as PostgreSQL counts them (code points, not UTF-16 units). */
export const DECIDED_BY_MAX_LENGTH = 128;

/** Why `name` cannot be recorded as the one who decided; undefined when it can. */
export function decidedByProblem(name: string): string | undefined {
  if (name.trim() === '') return 'must name who decided, e.g. --by alice';
  const length = [...name].length;
  if (length > DECIDED_BY_MAX_LENGTH) {
    return `must be at most ${DECIDED_BY_MAX_LENGTH} characters (the decision record stores no more); got ${length}`;
  }
  return undefined;
}

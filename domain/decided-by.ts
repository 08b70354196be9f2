// Who took an operator decision, as recorded with it in `compensation_record.decided_by
// VARCHAR(128)`. Every entry point that takes the name (the CLI's --by, the MCP operator tool's
// decidedBy) checks it against this bound, so a decision never fails at the write for its name.
// A decision taken through a door that marks its decisions is recorded with the door before the
// name (`mcp-operator:alice`): the name is the caller's word, the door is what the server checked
// (docs/architecture.md, decision 39). So no name a person gives may begin with a door's mark:
// `--by mcp-operator:alice` would read as a decision the operator token took.

/** The column's length, in characters as PostgreSQL counts them (code points, not UTF-16 units). */
export const DECIDED_BY_MAX_LENGTH = 128;

/**
 * The doors that mark their decisions with the name a caller gives: `/mcp` with MCP_OPERATOR_TOKEN,
 * and the `orders-mcp` stdio bin, run under the account of the operator who started it.
 */
export const DECISION_DOORS = ['mcp-operator', 'mcp-stdio'] as const;
export type DecisionDoor = (typeof DECISION_DOORS)[number];

/**
 * Every mark a recorded decision may begin with, a door's own and not a person's: the marking
 * doors above; `card`, a decision from a chat card (`card:<vendor>:<user id>`); and `cli`, what
 * orders-cli records without --by (`cli:<OS user>`). A door added here is refused as the start of
 * a name everywhere a person names themselves.
 */
export const DOOR_MARKS = [...DECISION_DOORS, 'card', 'cli'] as const;
export type DoorMark = (typeof DOOR_MARKS)[number];

/** What a name may not begin with: each mark and its colon (`mcp-operator:`). */
export const DOOR_PREFIXES: readonly string[] = DOOR_MARKS.map((mark) => `${mark}:`);

/** The longest name a marking door takes: its mark, a colon and the name fit the column. */
export const MARKED_DECIDED_BY_MAX_LENGTH =
  DECIDED_BY_MAX_LENGTH - Math.max(...DECISION_DOORS.map((door) => door.length)) - 1;

/** What is recorded for a decision `name` took through `door`. */
export function decidedThrough(door: DoorMark, name: string): string {
  return `${door}:${name}`;
}

/**
 * The door prefix `name` begins with, as a reader of the record would take it: case, leading
 * spaces and full-width forms (`ＭＣＰ-operator：`) aside. Undefined when it begins with none; a
 * colon anywhere else (`ops:alice`, `alice:night`) is no door's.
 */
export function doorPrefixOf(name: string): string | undefined {
  const read = name.normalize('NFKC').trimStart().toLowerCase();
  return DOOR_PREFIXES.find((prefix) => read.startsWith(prefix));
}

/** Why `name` may not be given as a person's, for its door prefix; undefined when it begins with none. */
export function doorPrefixProblem(name: string): string | undefined {
  const prefix = doorPrefixOf(name);
  return prefix === undefined
    ? undefined
    : `must not begin with "${prefix}": names beginning ${DOOR_PREFIXES.join(', ')} are the doors' own marks, recorded by the service`;
}

/** Why `name` cannot be recorded as the one who decided; undefined when it can. */
export function decidedByProblem(name: string): string | undefined {
  if (name.trim() === '') return 'must name who decided, e.g. --by alice';
  const length = [...name].length;
  if (length > DECIDED_BY_MAX_LENGTH) {
    return `must be at most ${DECIDED_BY_MAX_LENGTH} characters (the decision record stores no more); got ${length}`;
  }
  return doorPrefixProblem(name);
}

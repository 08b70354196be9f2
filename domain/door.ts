// A door is where a key can be claimed: the signed webhook, the MCP tool, or an OA vendor's
// callback and connection, named by the vendor's id. A door is known by its shape, not by a list:
// a new OA vendor is one folder and one line of vendors/registry.ts, and nothing here nor in the
// database changes for it. The stores check the same shape (idempotency_record.source,
// key_source_conflict.door and .claimed_by, order_main.source_at_purge).
//
// Pure and importable by workflow code: no Node built-ins.

/** A door's name: a lowercase letter, then 1 to 31 lowercase letters, digits or `-`. */
export const DOOR_SHAPE = /^[a-z][a-z0-9-]{1,31}$/;

/** Whether `name` has a door's shape. */
export function isDoorName(name: unknown): name is string {
  return typeof name === 'string' && DOOR_SHAPE.test(name);
}

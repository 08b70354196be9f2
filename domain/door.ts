// A door is where a key can be claimed: the signed webhook, the MCP tool, or an OA vendor's
// callback and connection, named by the vendor's id. A door is known by its shape, not by a list:
// a new OA vendor is one folder and one line of vendors/registry.ts, and nothing here nor in the
// database changes for it. The stores check the same shape (idempotency_record.source,
// key_source_conflict.door and .claimed_by, order_main.source_at_purge).
//
// Pure and importable by workflow code: no Node built-ins.
import { z } from 'zod';

/** A door's name: a lowercase letter, then 1 to 31 lowercase letters, digits or `-`. */
export const DOOR_SHAPE = /^[a-z][a-z0-9-]{1,31}$/;

/** A door's name; an OA vendor's door is its id (vendors/registry.ts lists them). */
export type Door = string;

/** The signed webhook's door. */
export const WEBHOOK_DOOR = 'webhook';
/** The MCP tool's door. */
export const MCP_DOOR = 'mcp';
/** The doors that name their order: the webhook's and MCP's. */
export type OrderNamingDoor = typeof WEBHOOK_DOOR | typeof MCP_DOOR;

/**
 * The doors whose deliveries name their order (the approval number and operation of one OA, the
 * order in the body); every other door is an OA vendor's, whose order is read from its form.
 */
export const ORDER_NAMING_DOORS: readonly Door[] = [WEBHOOK_DOOR, MCP_DOOR];

/** Whether `name` has a door's shape. */
export function isDoorName(name: unknown): name is Door {
  return typeof name === 'string' && DOOR_SHAPE.test(name);
}

/** A door's name where one arrives from outside (a setting, a file, a command line). */
export const doorNameSchema = z
  .string()
  .regex(DOOR_SHAPE, 'must be a door: a lowercase letter, then 1 to 31 lowercase letters, digits or "-"');

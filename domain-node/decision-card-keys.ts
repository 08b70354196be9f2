// The names of one waiting episode of a key, and of its card at a vendor. An episode is the state
// a key waits in and the moment it began to: the key waits again after a decision, and that is a
// new episode with a card of its own. The send key is what the vendor deduplicates a post by —
// Feishu's `uuid`, DingTalk's `outTrackId`, WeCom's `task_id` — short and plain enough for all three.
import { createHash } from 'node:crypto';

/** `<state>-<the moment it began, in base 36 milliseconds>`: readable, and the same for every scan. */
export function waitingEpisode(state: string, waitingSince: string): string {
  const began = Date.parse(waitingSince);
  if (!Number.isFinite(began)) throw new Error(`waiting since ${JSON.stringify(waitingSince)}: not a time`);
  return `${state.toLowerCase().replaceAll('_', '-')}-${began.toString(36)}`;
}

/**
 * The key a vendor deduplicates the card of `idempotencyKey`'s `episode` by: `card-` and 40 hex
 * characters of a SHA-256 of the vendor, the key and the episode (45 characters: within Feishu's 50,
 * of `[a-z0-9-]` only).
 */
export function cardSendKey(vendor: string, idempotencyKey: string, episode: string): string {
  const named = JSON.stringify([vendor, idempotencyKey, episode]);
  return `card-${createHash('sha256').update(named).digest('hex').slice(0, 40)}`;
}

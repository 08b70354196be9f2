// The texts a decision card shows, whichever chat draws it: cut to a length the chat takes, how
// long its key has waited, said in words, and the one link it opens.

/** `text` cut to `max` characters (code points), the last one "…" when it was longer. */
export function clipText(text: string, max: number): string {
  const chars = Array.from(text);
  return chars.length <= max ? text : `${chars.slice(0, max - 1).join('')}…`;
}

/** "3 d 4 h", "2 h 5 min", "12 min", "under a minute"; undefined when `since` is not a time. */
export function waitedFor(since: string, now: number): string | undefined {
  const from = Date.parse(since);
  if (Number.isNaN(from)) return undefined;
  const minutes = Math.max(0, Math.floor((now - from) / 60_000));
  const days = Math.floor(minutes / 1_440);
  const hours = Math.floor((minutes % 1_440) / 60);
  if (days > 0) return `${days} d ${hours} h`;
  if (hours > 0) return `${hours} h ${minutes % 60} min`;
  return minutes > 0 ? `${minutes} min` : 'under a minute';
}

/** The workflow's address when it is http(s), else undefined: a card opens no other scheme. */
export function httpAddress(address: string | undefined): string | undefined {
  if (address === undefined) return undefined;
  try {
    const url = new URL(address);
    return url.protocol === 'https:' || url.protocol === 'http:' ? url.href : undefined;
  } catch {
    return undefined;
  }
}

// HTTP Retry-After (RFC 9110 §10.2.3): delay-seconds or an HTTP date. Returns milliseconds from
// now, or undefined when absent or unreadable (then our own jittered backoff applies).
export function parseRetryAfterMs(value: string | null | undefined, nowMs: number = Date.now()): number | undefined {
  if (!value) return undefined;
  const trimmed = value.trim();
  if (/^\d+$/.test(trimmed)) return Number(trimmed) * 1000;
  // HTTP dates always name a day or month ("Sun, 06 Nov 1994 08:49:37 GMT"); anything else is noise.
  if (!/^[A-Za-z]{3}/.test(trimmed)) return undefined;
  const date = Date.parse(trimmed);
  if (Number.isNaN(date)) return undefined;
  return Math.max(0, date - nowMs);
}

// Money is decimal, never binary floating point: amounts travel as strings and are computed as
// integers of ten-thousandths (scale 4, the scale of the NUMERIC columns).

export const MONEY_SCALE = 4;
const SCALE_FACTOR = 10n ** BigInt(MONEY_SCALE);
const DECIMAL_PATTERN = /^(\d{1,14})(?:\.(\d{1,4}))?$/;

/** `NUMERIC(18,4)` holds at most 14 integer digits. */
export const MAX_AMOUNT_UNITS = 10n ** 18n - 1n;

/**
 * "10.5" → 105000n; undefined for anything that is not a plain non-negative decimal. For code that
 * meets amounts nobody has checked yet (input parsing), where a bad amount is an answer, not a crash.
 */
export function parseMoneyUnits(decimal: string): bigint | undefined {
  const match = DECIMAL_PATTERN.exec(decimal);
  if (!match) return undefined;
  const [, whole = '0', fraction = ''] = match;
  return BigInt(whole) * SCALE_FACTOR + BigInt(fraction.padEnd(MONEY_SCALE, '0'));
}

/** "10.5" → 105000n, for amounts already parsed. Throws on anything that is not a plain non-negative decimal. */
export function toMoneyUnits(decimal: string): bigint {
  const units = parseMoneyUnits(decimal);
  if (units === undefined) throw new RangeError(`${JSON.stringify(decimal)} is not a decimal amount`);
  return units;
}

/** 105000n → "10.5000": always four decimals, so equal amounts are equal strings. */
export function formatMoneyUnits(units: bigint): string {
  const sign = units < 0n ? '-' : '';
  const abs = units < 0n ? -units : units;
  const whole = abs / SCALE_FACTOR;
  const fraction = (abs % SCALE_FACTOR).toString().padStart(MONEY_SCALE, '0');
  return `${sign}${whole}.${fraction}`;
}

/** Normalises a decimal string to scale 4: "10.0" and "10.00" both become "10.0000". */
export function normaliseMoney(decimal: string): string {
  return formatMoneyUnits(toMoneyUnits(decimal));
}

// The few statistics the bench and the chaos run print: percentiles of a sample and a least-squares slope.

/** The p-th percentile of an ascending sample (nearest rank); NaN when empty. */
export function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return Number.NaN;
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? Number.NaN;
}

export interface Spread {
  count: number;
  p50: number;
  p99: number;
  max: number;
}

export function spreadOf(values: number[]): Spread {
  const sorted = [...values].sort((a, b) => a - b);
  return {
    count: sorted.length,
    p50: percentile(sorted, 50),
    p99: percentile(sorted, 99),
    max: sorted.at(-1) ?? Number.NaN,
  };
}

/** The slope of the least-squares line through the points (y per unit of x); NaN under two distinct x. */
export function leastSquaresSlope(points: { x: number; y: number }[]): number {
  const usable = points.filter((point) => Number.isFinite(point.x) && Number.isFinite(point.y));
  const n = usable.length;
  if (n < 2) return Number.NaN;
  const meanX = usable.reduce((sum, point) => sum + point.x, 0) / n;
  const meanY = usable.reduce((sum, point) => sum + point.y, 0) / n;
  let covariance = 0;
  let variance = 0;
  for (const point of usable) {
    covariance += (point.x - meanX) * (point.y - meanY);
    variance += (point.x - meanX) ** 2;
  }
  return variance === 0 ? Number.NaN : covariance / variance;
}

/** The largest value, or `empty` when there is none; safe for samples too long to spread into Math.max. */
export function largest(values: Iterable<number>, empty = Number.NaN): number {
  let found = empty;
  let any = false;
  for (const value of values) {
    if (!any || value > found) found = value;
    any = true;
  }
  return found;
}

// Each figure of a bench run across its rounds — throughput, latency, CPU per order in all and by
// process — as its median and its spread (the lowest and the highest round), and whether a change
// against an earlier run is outside the noise: a figure moved outside the noise when the two runs'
// ranges do not overlap. Also the order the measurements run in, new each round. Pure functions:
// `npm run bench` (./run.ts) feeds them its rounds and prints what they answer.
/** One measurement of one round, as ./run.ts records it (the fields read here). */
export interface RoundMeasurement {
  name: string;
  concurrency: number;
  throughput: number;
  p50: number;
  p99: number;
  /** CPU milliseconds per completed item, by part of the system. */
  cpuMsPerItem?: Record<string, number> | undefined;
  /** Which round measured it. */
  round?: number | undefined;
}

/** A figure across rounds: its median, and the lowest and highest round. */
export interface RoundSpread {
  median: number;
  low: number;
  high: number;
  rounds: number;
}

/** One measurement at one level, every figure across its rounds. */
export interface Figures {
  name: string;
  concurrency: number;
  throughput: RoundSpread;
  p50: RoundSpread;
  p99: RoundSpread;
  /** The bench's processes together, per order (what the machine outside the bench did left out). */
  cpuMsPerOrder?: RoundSpread | undefined;
  cpuMsPerOrderByProcess?: Record<string, RoundSpread> | undefined;
}

/** The share of the CPU that `cpuPerItem` books to the machine outside the bench (./cpu-accounting.ts). */
const OUTSIDE_THE_BENCH = 'outside the bench';

/** The median (the mean of the middle two of an even count) and the range; NaN throughout when empty. */
export function roundSpread(values: readonly number[]): RoundSpread {
  const sorted = values.filter(Number.isFinite).sort((a, b) => a - b);
  if (sorted.length === 0) return { median: Number.NaN, low: Number.NaN, high: Number.NaN, rounds: 0 };
  const middle = Math.floor(sorted.length / 2);
  const median =
    sorted.length % 2 === 1
      ? (sorted[middle] as number)
      : ((sorted[middle - 1] as number) + (sorted[middle] as number)) / 2;
  return { median, low: sorted[0] as number, high: sorted.at(-1) as number, rounds: sorted.length };
}

const cpuTotal = (parts: Record<string, number>) =>
  Object.entries(parts).reduce((sum, [part, ms]) => (part === OUTSIDE_THE_BENCH ? sum : sum + ms), 0);

/** The figures of every measurement and level of `rounds`, in the order they first appear. */
export function figuresOf(rounds: readonly RoundMeasurement[]): Figures[] {
  const groups = new Map<string, RoundMeasurement[]>();
  for (const measured of rounds) {
    const key = `${measured.name}@${measured.concurrency}`;
    groups.set(key, [...(groups.get(key) ?? []), measured]);
  }
  return [...groups.values()].map((group) => {
    const first = group[0] as RoundMeasurement;
    const withCpu = group.flatMap((measured) => (measured.cpuMsPerItem ? [measured.cpuMsPerItem] : []));
    const processes = [...new Set(withCpu.flatMap((parts) => Object.keys(parts)))].filter(
      (part) => part !== OUTSIDE_THE_BENCH,
    );
    return {
      name: first.name,
      concurrency: first.concurrency,
      throughput: roundSpread(group.map((measured) => measured.throughput)),
      p50: roundSpread(group.map((measured) => measured.p50)),
      p99: roundSpread(group.map((measured) => measured.p99)),
      ...(withCpu.length > 0
        ? {
            cpuMsPerOrder: roundSpread(withCpu.map(cpuTotal)),
            cpuMsPerOrderByProcess: Object.fromEntries(
              processes.map((part) => [part, roundSpread(withCpu.map((parts) => parts[part] ?? 0))]),
            ),
          }
        : {}),
    };
  });
}

/** One measurement's throughput over a yardstick's, taken within each round, then across rounds. */
export interface PairedRatio {
  name: string;
  yardstick: string;
  concurrency: number;
  /** The ratio in each round both were measured in, in round order. */
  perRound: number[];
  spread: RoundSpread;
}

/**
 * Each of `names` over each of `yardsticks`, at every level: the throughputs' ratio within each
 * round, then the median and range of those ratios. Both sides of a ratio ran minutes apart at
 * most, on the machine as it was then; the ratio of two medians instead pairs rounds that may lie
 * a quarter of an hour apart, and the machine's speed drifts by more than the goals' margins.
 */
export function pairedRatios(
  rounds: readonly RoundMeasurement[],
  names: readonly string[],
  yardsticks: readonly string[],
): PairedRatio[] {
  const levels = [...new Set(rounds.map((measured) => measured.concurrency))];
  const ratios: PairedRatio[] = [];
  for (const concurrency of levels) {
    for (const name of names) {
      for (const yardstick of yardsticks) {
        const perRound = rounds
          .filter((measured) => measured.name === name && measured.concurrency === concurrency)
          .flatMap((measured) => {
            const other = rounds.find(
              (candidate) =>
                candidate.name === yardstick &&
                candidate.concurrency === concurrency &&
                candidate.round !== undefined &&
                candidate.round === measured.round,
            );
            return other && other.throughput > 0 ? [measured.throughput / other.throughput] : [];
          });
        if (perRound.length > 0) ratios.push({ name, yardstick, concurrency, perRound, spread: roundSpread(perRound) });
      }
    }
  }
  return ratios;
}

/** Below this, a process's CPU per order is another measurement's idle process, not part of this one. */
const MEANINGFUL_MS = 0.5;

/** A figure of this run against the same figure of an earlier one. */
export interface Change {
  name: string;
  concurrency: number;
  figure: string;
  before: RoundSpread;
  after: RoundSpread;
  /** After's median less before's. */
  change: number;
  /** The change over before's median. */
  relative: number;
  /** Outside the noise: the two runs' ranges do not overlap. */
  outsideTheNoise: boolean;
}

/** Every figure both runs have, CPU per order first (it moves least on a shared machine). */
export function changesBetween(before: readonly Figures[], after: readonly Figures[]): Change[] {
  const changes: Change[] = [];
  for (const now of after) {
    const then = before.find((earlier) => earlier.name === now.name && earlier.concurrency === now.concurrency);
    if (!then) continue;
    const pairs: [string, RoundSpread | undefined, RoundSpread | undefined][] = [
      ['CPU ms per order', then.cpuMsPerOrder, now.cpuMsPerOrder],
      ...Object.entries(now.cpuMsPerOrderByProcess ?? {}).map(
        ([part, spread]): [string, RoundSpread | undefined, RoundSpread | undefined] => [
          `  ${part}`,
          then.cpuMsPerOrderByProcess?.[part],
          spread,
        ],
      ),
      ['throughput /s', then.throughput, now.throughput],
      ['p50 ms', then.p50, now.p50],
      ['p99 ms', then.p99, now.p99],
    ];
    for (const [figure, was, is] of pairs) {
      if (!was || !is || was.rounds === 0 || is.rounds === 0) continue;
      // A process with next to nothing to do in this measurement (another's edge, say) says nothing.
      if (figure.startsWith(' ') && Math.max(was.high, is.high) < MEANINGFUL_MS) continue;
      changes.push({
        name: now.name,
        concurrency: now.concurrency,
        figure,
        before: was,
        after: is,
        change: is.median - was.median,
        relative: was.median === 0 ? Number.NaN : (is.median - was.median) / was.median,
        outsideTheNoise: is.low > was.high || is.high < was.low,
      });
    }
  }
  return changes;
}

/** A figure as the tables print it: `36.7 (35.1–38.0)`. */
export function shown(spread: RoundSpread, digits = 1): string {
  return `${spread.median.toFixed(digits)} (${spread.low.toFixed(digits)}–${spread.high.toFixed(digits)})`;
}

/** One line of the comparison: the figure, both runs, the change and whether noise can hide it. */
export function changeLine(change: Change): string {
  const sign = change.change >= 0 ? '+' : '−';
  const percent = Number.isFinite(change.relative) ? ` (${sign}${Math.abs(change.relative * 100).toFixed(0)} %)` : '';
  return (
    `| ${change.concurrency} | ${change.name} | ${change.figure} | ${shown(change.before)} | ${shown(change.after)} | ` +
    `${sign}${Math.abs(change.change).toFixed(1)}${percent} | ${change.outsideTheNoise ? 'outside the noise' : 'within it'} |`
  );
}

/**
 * The order `names` run in, each round: shuffled anew, and never the previous round's when another
 * exists, so no measurement always follows the same one (and inherits its caches or its load).
 */
export function roundOrders<T>(names: readonly T[], rounds: number, random: () => number): T[][] {
  const orders: T[][] = [];
  for (let round = 0; round < rounds; round += 1) {
    let order: T[];
    let tries = 0;
    do {
      order = [...names];
      for (let at = order.length - 1; at > 0; at -= 1) {
        const other = Math.floor(random() * (at + 1));
        [order[at], order[other]] = [order[other] as T, order[at] as T];
      }
      tries += 1;
    } while (names.length > 1 && tries < 20 && sameOrder(order, orders.at(-1)));
    orders.push(order);
  }
  return orders;
}

const sameOrder = <T>(a: readonly T[], b: readonly T[] | undefined) =>
  b !== undefined && a.every((name, index) => name === b[index]);

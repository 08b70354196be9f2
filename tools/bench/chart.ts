// The benchmark's chart: throughput per concurrency level, ours (both ways of running the worker)
// beside the engine's yardsticks and the database floor, as a dependency-free SVG.

interface Point {
  name: string;
  concurrency: number;
  throughput: number;
}

const SERIES = [
  { name: 'ours', colour: '#2f6fdb' },
  { name: 'ours (worker process)', colour: '#8fb3ee' },
  { name: 'engine floor', colour: '#9aa5b1' },
  { name: 'local-activity floor', colour: '#5c6773' },
  { name: 'engine ceiling', colour: '#2e9e6a' },
  { name: 'db floor', colour: '#e0a030' },
];
const LEGEND_COLUMNS = 3;

export function renderChart(points: Point[]): string {
  const levels = [...new Set(points.map((point) => point.concurrency))];
  const enginePeak = Math.max(...points.filter((p) => p.name !== 'db floor').map((p) => p.throughput), 1);
  const width = 720;
  const height = 380;
  const plot = { left: 60, top: 40, width: width - 80, height: height - 120 };
  const group = plot.width / levels.length;
  const bar = (group - 20) / SERIES.length;
  // The database floor is far above the engine's: its bars are clipped, their value written on top.
  const max = Math.ceil((enginePeak * 1.3) / 10) * 10;
  const y = (value: number) => plot.top + plot.height - (Math.min(value, max) / max) * plot.height;
  const parts: string[] = [];
  for (let tick = 0; tick <= max; tick += max / 5) {
    parts.push(
      `<line x1="${plot.left}" x2="${plot.left + plot.width}" y1="${y(tick)}" y2="${y(tick)}" stroke="#eee"/>`,
      `<text x="${plot.left - 8}" y="${y(tick) + 4}" text-anchor="end">${tick.toFixed(0)}</text>`,
    );
  }
  levels.forEach((level, index) => {
    const x0 = plot.left + index * group + 10;
    SERIES.forEach((series, s) => {
      const value = points.find((point) => point.name === series.name && point.concurrency === level)?.throughput ?? 0;
      const x = x0 + s * bar;
      parts.push(
        `<rect x="${x}" y="${y(value)}" width="${bar - 2}" height="${plot.top + plot.height - y(value)}" fill="${series.colour}"/>`,
        `<text x="${x + bar / 2}" y="${y(value) - 4}" text-anchor="middle" font-size="10">${value.toFixed(0)}</text>`,
      );
    });
    parts.push(
      `<text x="${x0 + (group - 20) / 2}" y="${plot.top + plot.height + 20}" text-anchor="middle">c = ${level}</text>`,
    );
  });
  SERIES.forEach((series, s) => {
    const x = plot.left + (s % LEGEND_COLUMNS) * 200;
    const top = height - 48 + Math.floor(s / LEGEND_COLUMNS) * 20;
    parts.push(
      `<rect x="${x}" y="${top}" width="12" height="12" fill="${series.colour}"/>`,
      `<text x="${x + 18}" y="${top + 10}">${series.name}</text>`,
    );
  });
  return [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" font-family="sans-serif" font-size="12">`,
    `<rect width="${width}" height="${height}" fill="white"/>`,
    `<text x="${plot.left}" y="22" font-size="14">Orders (or workflows, or transactions) completed per second</text>`,
    ...parts,
    '</svg>',
    '',
  ].join('\n');
}

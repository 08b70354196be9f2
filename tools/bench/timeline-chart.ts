// The burst's and soak's charts: panels of lines over one time axis (answers and orders per
// second, resident memory per process), as a dependency-free SVG like chart.ts's.
import { largest } from '../harness/stats.js';

export interface Line {
  name: string;
  points: { t: number; value: number }[];
}

export interface Panel {
  title: string;
  lines: Line[];
}

const COLOURS = ['#2f6fdb', '#e0a030', '#2e9e6a', '#c0392b', '#8e44ad', '#5c6773'];
const WIDTH = 760;
const PANEL_HEIGHT = 170;
const LEFT = 60;
const RIGHT = 20;

/** A round upper bound for the axis: a power of ten times 1, 1.5, 2, 3, 4, 5, 6 or 8. */
function niceMax(value: number): number {
  if (!(value > 0)) return 1;
  const power = 10 ** Math.floor(Math.log10(value));
  return ([1, 1.5, 2, 3, 4, 5, 6, 8, 10].find((step) => step * power >= value) ?? 10) * power;
}

const escape = (text: string) => text.replaceAll('&', '&amp;').replaceAll('<', '&lt;').replaceAll('>', '&gt;');

export function renderTimeline(title: string, panels: Panel[]): string {
  const allTimes = panels.flatMap((panel) => panel.lines.flatMap((line) => line.points.map((point) => point.t)));
  const maxT = niceMax(largest(allTimes, 1));
  const plotWidth = WIDTH - LEFT - RIGHT;
  const height = 40 + panels.length * (PANEL_HEIGHT + 30) + 20;
  const x = (t: number) => LEFT + (t / maxT) * plotWidth;
  const parts: string[] = [];
  panels.forEach((panel, index) => {
    const top = 40 + index * (PANEL_HEIGHT + 30) + 20;
    const values = panel.lines.flatMap((line) => line.points.map((point) => point.value)).filter(Number.isFinite);
    const maxV = niceMax(largest(values, 0));
    const y = (value: number) => top + PANEL_HEIGHT - (Math.min(value, maxV) / maxV) * PANEL_HEIGHT;
    parts.push(`<text x="${LEFT}" y="${top - 8}" font-size="13">${escape(panel.title)}</text>`);
    for (let tick = 0; tick <= 4; tick += 1) {
      const value = (maxV * tick) / 4;
      parts.push(
        `<line x1="${LEFT}" x2="${LEFT + plotWidth}" y1="${y(value)}" y2="${y(value)}" stroke="#eee"/>`,
        `<text x="${LEFT - 6}" y="${y(value) + 4}" text-anchor="end">${Number(value.toPrecision(3))}</text>`,
      );
    }
    for (let tick = 0; tick <= 5; tick += 1) {
      const t = (maxT * tick) / 5;
      parts.push(
        `<text x="${x(t)}" y="${top + PANEL_HEIGHT + 14}" text-anchor="middle" font-size="10">${Number(t.toPrecision(3))} s</text>`,
      );
    }
    panel.lines.forEach((line, l) => {
      const colour = COLOURS[l % COLOURS.length] as string;
      const points = line.points
        .filter((point) => Number.isFinite(point.value))
        .map((point) => `${x(point.t).toFixed(1)},${y(point.value).toFixed(1)}`)
        .join(' ');
      if (points) parts.push(`<polyline fill="none" stroke="${colour}" stroke-width="1.5" points="${points}"/>`);
      const legendX = LEFT + plotWidth - 170;
      const legendY = top + 4 + l * 16;
      parts.push(
        `<rect x="${legendX}" y="${legendY}" width="10" height="10" fill="${colour}"/>`,
        `<text x="${legendX + 15}" y="${legendY + 9}" font-size="11">${escape(line.name)}</text>`,
      );
    });
  });
  return [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${WIDTH}" height="${height}" font-family="sans-serif" font-size="12">`,
    `<rect width="${WIDTH}" height="${height}" fill="white"/>`,
    `<text x="${LEFT}" y="24" font-size="14">${escape(title)}</text>`,
    ...parts,
    '</svg>',
    '',
  ].join('\n');
}

// `npm run bench:profile-top -- <folder>`: the top entries of the V8 CPU profiles `npm run bench --
// --profile <folder>` wrote, one block per profiled thread: its busy time, where that time went by
// package (a dependency under node_modules, a folder of this project, Node.js itself, the garbage
// collector), and the functions with the most self time.
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  hitCount?: number;
  children?: number[];
}

interface CpuProfile {
  nodes: ProfileNode[];
  startTime: number;
  endTime: number;
  samples: number[];
  timeDeltas: number[];
}

/** Entry points the bench starts, as they appear in a profile's frames: the first found names the thread. */
const ENTRIES: [string, string][] = [
  ['tools/bench/floor-api.ts', 'floor api'],
  ['tools/bench/floor-worker.ts', 'floor worker'],
  ['app/api-main.ts', 'api'],
  ['app/worker-main.ts', 'worker'],
];

const SHOWN_GROUPS = 14;
const SHOWN_FUNCTIONS = 25;
const SHOWN_OWN_FUNCTIONS = 20;

/** Where a frame's code lives: a package, a folder of the project, Node.js, or V8's own entries. */
function groupOf(url: string, functionName: string, root: string): string {
  if (url === '') return functionName.startsWith('(') ? functionName : '(native)';
  if (url.startsWith('node:')) return 'node.js';
  const file = url.startsWith('file://') ? decodeURIComponent(new URL(url).pathname) : url;
  const inModules = file.lastIndexOf('/node_modules/');
  if (inModules >= 0) {
    const [first, second] = file.slice(inModules + '/node_modules/'.length).split('/');
    return first?.startsWith('@') ? `${first}/${second}` : (first ?? file);
  }
  if (file.startsWith(root)) {
    const parts = path.relative(root, file).split(path.sep);
    return parts.length > 2 ? parts.slice(0, 2).join('/') : (parts[0] ?? file);
  }
  // The workflow bundle runs from an in-memory script named after the bundle.
  return url.includes('workflow') ? 'workflow bundle' : url;
}

/**
 * Self time in ms per node id, from the samples and their time deltas; the samples of the first
 * `skipSeconds` (the process's start, the bench's warm-up) left out.
 */
function selfTimes(profile: CpuProfile, skipSeconds: number): Map<number, number> {
  const times = new Map<number, number>();
  let at = 0;
  profile.samples.forEach((id, index) => {
    const delta = profile.timeDeltas[index] ?? 0;
    at += delta;
    if (at / 1e6 >= skipSeconds) times.set(id, (times.get(id) ?? 0) + delta / 1000);
  });
  return times;
}

/**
 * Time spent in each of the project's own functions, the functions they called included (each
 * sample counted once per function on its stack). An async function counts each stretch it ran
 * between its awaits, not the waits.
 */
function ownFunctionsInclusive(profile: CpuProfile, times: Map<number, number>, root: string): Map<string, number> {
  const parentOf = new Map<number, ProfileNode>();
  for (const node of profile.nodes) for (const child of node.children ?? []) parentOf.set(child, node);
  const inclusive = new Map<string, number>();
  for (const node of profile.nodes) {
    const ms = times.get(node.id) ?? 0;
    if (ms === 0 || node.callFrame.functionName === '(idle)') continue;
    const seen = new Set<string>();
    for (let frame: ProfileNode | undefined = node; frame; frame = parentOf.get(frame.id)) {
      const { url, functionName, lineNumber } = frame.callFrame;
      const group = groupOf(url, functionName, root);
      if (!url || group === url || group.startsWith('@') || !url.includes(root) || url.includes('/node_modules/'))
        continue;
      const name = `${functionName || '(anonymous)'} ${path.relative(root, decodeURIComponent(new URL(url).pathname))}:${lineNumber + 1}`;
      if (seen.has(name)) continue;
      seen.add(name);
      inclusive.set(name, (inclusive.get(name) ?? 0) + ms);
    }
  }
  return inclusive;
}

function threadName(profile: CpuProfile, file: string): string {
  const urls = new Set(profile.nodes.map((node) => node.callFrame.url));
  const entry = ENTRIES.find(([name]) => [...urls].some((url) => url.endsWith(name)));
  const workflowThread = profile.nodes.some((node) => node.callFrame.functionName === 'activate');
  return `${entry?.[1] ?? 'process'}${workflowThread && !entry ? ' (workflow thread)' : ''} — ${path.basename(file)}`;
}

function top(entries: Map<string, number>, count: number, busy: number): string[] {
  return [...entries]
    .sort((a, b) => b[1] - a[1])
    .slice(0, count)
    .map(([name, ms]) => `  ${ms.toFixed(0).padStart(7)} ms ${((ms / busy) * 100).toFixed(1).padStart(5)} %  ${name}`);
}

function describeProfile(
  profile: CpuProfile,
  file: string,
  root: string,
  skipSeconds: number,
): { busy: number; lines: string[] } {
  const times = selfTimes(profile, skipSeconds);
  const byGroup = new Map<string, number>();
  const byFunction = new Map<string, number>();
  let busy = 0;
  for (const node of profile.nodes) {
    const ms = times.get(node.id) ?? 0;
    const { functionName, url, lineNumber } = node.callFrame;
    if (ms === 0 || functionName === '(idle)') continue;
    busy += ms;
    const group = groupOf(url, functionName, root);
    byGroup.set(group, (byGroup.get(group) ?? 0) + ms);
    const name = `${functionName || '(anonymous)'} ${group}${url ? `:${lineNumber + 1}` : ''}`;
    byFunction.set(name, (byFunction.get(name) ?? 0) + ms);
  }
  const seconds = (profile.endTime - profile.startTime) / 1e6;
  const own = ownFunctionsInclusive(profile, times, root);
  const lines = [
    `${threadName(profile, file)}: busy ${(busy / 1000).toFixed(1)} s of ${seconds.toFixed(1)} s`,
    ' by package (self time):',
    ...top(byGroup, SHOWN_GROUPS, busy),
    ' by function (self time):',
    ...top(byFunction, SHOWN_FUNCTIONS, busy),
    ...(own.size > 0
      ? [" this project's functions (their own time and their callees'):", ...top(own, SHOWN_OWN_FUNCTIONS, busy)]
      : []),
  ];
  return { busy, lines };
}

function main(): void {
  const { values, positionals } = parseArgs({
    options: { skip: { type: 'string', default: '0' } },
    allowPositionals: true,
  });
  const folder = positionals[0];
  const skipSeconds = Number(values.skip);
  if (!folder || !(skipSeconds >= 0)) {
    console.error(
      "usage: npm run bench:profile-top -- [--skip <seconds from each thread's start>] <folder of .cpuprofile files>",
    );
    process.exit(2);
  }
  const files = readdirSync(folder).filter((name) => name.endsWith('.cpuprofile'));
  if (files.length === 0) {
    console.error(`no .cpuprofile file in ${folder}`);
    process.exit(1);
  }
  const root = process.cwd();
  const blocks = files.map((name) => {
    const file = path.join(folder, name);
    return describeProfile(JSON.parse(readFileSync(file, 'utf8')) as CpuProfile, file, root, skipSeconds);
  });
  for (const block of blocks.sort((a, b) => b.busy - a.busy)) console.log(`${block.lines.join('\n')}\n`);
}

main();

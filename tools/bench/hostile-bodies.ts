// `npm run bench:hostile`: what one hostile body costs the readers that run on text a stranger
// sends, before and after they became linear. For each reader and each of its worst inputs, at
// each size, the CPU time of one read — the time the event loop, and so every door and /livez,
// waits. The "before" readers are the backtracking expressions kept in tools/harness; a read of
// those at the body limit takes seconds, so `--sizes` can leave the largest out.
import { parseArgs } from 'node:util';
import { scrubbed } from '../../domain-node/redact-url.js';
import { xmlChildren } from '../../vendors/wecom/xml.js';
import { BACKTRACKING_URL, backtrackingXmlChildren } from '../harness/backtracking-parsers.js';
import { cpuMillisecondsOf, filled } from '../harness/hostile-input.js';

const { values } = parseArgs({ options: { sizes: { type: 'string', default: '16,64,256' } } });
const sizesKiB = (values.sizes ?? '').split(',').map(Number);
if (sizesKiB.some((size) => !Number.isInteger(size) || size < 1 || size > 1024)) {
  console.error('usage: npm run bench:hostile -- [--sizes 16,64,256] (KiB, 1 to 1024)');
  process.exit(2);
}

const READERS = [
  {
    name: 'WeCom XML',
    input: (size: number) => filled(size, 'a', '<'),
    shown: "'<' + 'a'…",
    before: (text: string) => void backtrackingXmlChildren(text),
    after: (text: string) => void xmlChildren(text),
  },
  {
    name: 'URL scrubber',
    input: (size: number) => filled(size, 'a.'),
    shown: "'a.a.'…",
    before: (text: string) => void text.replace(BACKTRACKING_URL, 'x'),
    after: (text: string) => void scrubbed(text, []),
  },
];

console.log('| reader | input | size | before (ms of CPU) | after (ms of CPU) |');
console.log('|---|---|---|---|---|');
for (const reader of READERS) {
  for (const kib of sizesKiB) {
    const text = reader.input(kib * 1024);
    // One warm read each, so the figure is the read and not the compilation.
    reader.after(text.slice(0, 1024));
    reader.before(text.slice(0, 1024));
    const after = cpuMillisecondsOf(() => reader.after(text));
    const before = cpuMillisecondsOf(() => reader.before(text));
    console.log(`| ${reader.name} | ${reader.shown} | ${kib} KiB | ${before.toFixed(1)} | ${after.toFixed(2)} |`);
  }
}

// `npm run test-map`: rewrites the module→test map of test/README.md ("Which test owns what")
// between its markers, from the import graph (tools/scripts/test-map.ts). Run it after adding,
// moving or removing a module or a test, or changing what a test imports; a unit test fails while
// the committed map differs from what this writes.
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { ROOT, TEST_README, computeTestMap, renderTestMap, withTestMap } from './test-map.js';

const file = path.join(ROOT, TEST_README);
const doc = readFileSync(file, 'utf8');
const updated = await withTestMap(doc, renderTestMap(computeTestMap()));
writeFileSync(file, updated);
console.log(updated === doc ? `${TEST_README}: the map was up to date` : `wrote the map into ${TEST_README}`);

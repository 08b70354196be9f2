// `npm run openapi`: rewrites docs/openapi.json from the routes' schemas (edges/http/openapi.ts).
// A unit test fails while the committed file differs from what this writes.
import { writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { openApiDocument } from '../../edges/http/openapi.js';

export const COMMITTED_OPENAPI = fileURLToPath(new URL('../../docs/openapi.json', import.meta.url));

/** The committed file's text: the document as prettier leaves JSON, so `npm run format` keeps it. */
export function openApiText(): string {
  return JSON.stringify(openApiDocument(), null, 2) + '\n';
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  writeFileSync(COMMITTED_OPENAPI, openApiText());
  console.log(`wrote ${COMMITTED_OPENAPI}`);
}

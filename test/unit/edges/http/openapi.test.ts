// The OpenAPI document: a valid OpenAPI 3.1 document, committed as generated, and built from the
// same schemas the webhook handler parses with.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { Validator } from '@seriousme/openapi-schema-validator';
import { openApiDocument } from '../../../../edges/http/openapi.js';
import { PROBLEM_TYPES } from '../../../../edges/http/problem.js';
import { COMMITTED_OPENAPI, openApiText } from '../../../../tools/scripts/write-openapi.js';

async function validate(document: Record<string, unknown>) {
  return new Validator().validate(structuredClone(document));
}

describe('the OpenAPI document', () => {
  it('is a valid OpenAPI 3.1 document', async () => {
    const document = openApiDocument();
    assert.equal(document.openapi, '3.1.0');
    const result = await validate(document);
    assert.deepEqual(result.errors, undefined);
    assert.equal(result.valid, true);
  });

  it('is refused by the validator when broken', async () => {
    // A parameter that does not say where it goes.
    const broken = openApiDocument() as { paths: Record<string, { get?: { parameters?: { in?: string }[] } }> };
    delete broken.paths['/orders/{key}']?.get?.parameters?.[0]?.in;
    assert.equal((await validate(broken)).valid, false);
    // An info object without its version.
    assert.equal((await validate({ ...openApiDocument(), info: { title: 'no version' } })).valid, false);
  });

  it('is committed as generated (run `npm run openapi` after changing a route)', () => {
    assert.equal(readFileSync(COMMITTED_OPENAPI, 'utf8'), openApiText());
  });

  it('documents every problem type with its status', () => {
    const text = openApiText();
    for (const [slug, { status }] of Object.entries(PROBLEM_TYPES)) {
      assert.ok(text.includes(`/problems/${slug}`), `${slug} is documented`);
      assert.ok(status >= 400 && status < 600);
    }
  });
});

// A configured URL as every output shows it: without the password, the user or any query value,
// with the host, the path and the parameter names an operator needs. Generated URLs, and the raw
// rendering as the broken variant that the same check finds.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { REDACTED, redactRequestTarget, redactUrl, UNPARSABLE_URL } from '../../../domain-node/redact-url.js';

const lower = 'abcdefghijklmnopqrstuvwxyz0123456789'.split('');
const word = fc.string({ unit: fc.constantFrom(...lower), minLength: 1, maxLength: 10 });
// Every secret holds a capital Q, which no generated host, path or name and no REDACTED can hold:
// finding one in the output can only mean a secret leaked. The rest is any text at all.
const secret = fc
  .tuple(fc.string({ maxLength: 6 }), fc.string({ unit: 'grapheme', maxLength: 12 }))
  .map(([a, b]) => `${a}Q${b}`);

interface Generated {
  url: string;
  secrets: string[];
  host: string;
  path: string;
  names: string[];
}

const generatedUrl: fc.Arbitrary<Generated> = fc
  .record({
    scheme: fc.constantFrom('https', 'http', 'postgresql', 'amqp', 'amqps'),
    user: fc.option(secret, { nil: undefined }),
    password: fc.option(secret, { nil: undefined }),
    labels: fc.array(word, { minLength: 1, maxLength: 3 }),
    port: fc.option(fc.integer({ min: 1, max: 65535 }), { nil: undefined }),
    segments: fc.array(word, { maxLength: 3 }),
    query: fc.array(fc.record({ name: fc.option(word, { nil: undefined }), value: secret }), { maxLength: 4 }),
  })
  .map(({ scheme, user, password, labels, port, segments, query }) => {
    const userinfo =
      user === undefined && password === undefined
        ? ''
        : `${encodeURIComponent(user ?? '')}${password === undefined ? '' : `:${encodeURIComponent(password)}`}@`;
    const host = `${labels.join('..')}.example${port === undefined ? '' : `:${port}`}`;
    const path = `/${segments.join('/')}`;
    // A part without a name is a bare token (`?<token>`), a value all the same.
    const parts = query.map(({ name, value }) =>
      name === undefined ? encodeURIComponent(value) : `${name}=${encodeURIComponent(value)}`,
    );
    return {
      url: `${scheme}://${userinfo}${host}${path}${parts.length > 0 ? `?${parts.join('&')}` : ''}`,
      secrets: [user, password, ...query.map(({ value }) => value)].filter((value) => value !== undefined),
      host,
      path,
      names: query.flatMap(({ name }) => (name === undefined ? [] : [name])),
    };
  });

/** The secrets of `generated` that `output` shows, as they were written or as a URL encodes them. */
function leakedIn(output: string, generated: Generated): string[] {
  return generated.secrets.filter(
    (value) => value !== '' && [value, encodeURIComponent(value)].some((form) => output.includes(form)),
  );
}

describe('URL redaction', () => {
  it('hides the password, the user and every query value of any URL, and keeps the host, the path and the parameter names', () => {
    fc.assert(
      fc.property(generatedUrl, (generated) => {
        const shown = redactUrl(generated.url);
        assert.deepEqual(leakedIn(shown, generated), [], `${generated.url} → ${shown}`);
        const reparsed = new URL(shown);
        assert.equal(reparsed.host, new URL(generated.url).host);
        assert.equal(reparsed.pathname, new URL(generated.url).pathname);
        assert.deepEqual(
          [...reparsed.searchParams.keys()].filter((name) => name !== REDACTED),
          generated.names,
        );
        assert.ok([...reparsed.searchParams.values()].every((value) => value === REDACTED || value === ''));
      }),
      { numRuns: 500 },
    );
  });

  it('renders a downstream URL with a query token as the operator recognises it', () => {
    assert.equal(
      redactUrl('https://erp.example/hook?code=s3cr3t&tenant=7'),
      'https://erp.example/hook?code=REDACTED&tenant=REDACTED',
    );
    assert.equal(
      redactUrl('postgresql://orders:pa%40ss@db.internal:5432/orders?sslmode=require'),
      'postgresql://REDACTED:REDACTED@db.internal:5432/orders?sslmode=REDACTED',
    );
    assert.equal(redactUrl('amqp://guest:guest@127.0.0.1:5672'), 'amqp://REDACTED:REDACTED@127.0.0.1:5672');
    assert.equal(redactUrl('http://localhost:4318'), 'http://localhost:4318/');
    assert.equal(redactUrl('https://erp.example/hook#access_token=abc'), 'https://erp.example/hook');
  });

  it('shows nothing of a value that does not parse as a URL, since all of it may be the secret', () => {
    assert.equal(redactUrl('not a url with s3cr3t'), UNPARSABLE_URL);
    assert.equal(redactUrl(''), UNPARSABLE_URL);
  });

  it('the check finds the secret in a rendering that does not redact (the raw URL)', () => {
    fc.assert(
      fc.property(
        generatedUrl.filter((generated) => generated.secrets.length > 0),
        (generated) => leakedIn(generated.url, generated).length > 0,
      ),
      { numRuns: 200 },
    );
  });

  it('shows a request target with its path and parameter names, never its query values', () => {
    assert.equal(redactRequestTarget('/mcp?token=abc&x=1'), '/mcp?token=REDACTED&x=REDACTED');
    assert.equal(
      redactRequestTarget('/webhooks/dingtalk?msg_signature=s&nonce=n'),
      '/webhooks/dingtalk?msg_signature=REDACTED&nonce=REDACTED',
    );
    assert.equal(redactRequestTarget('/livez'), '/livez');
    assert.equal(redactRequestTarget('/x?bare-token'), '/x?REDACTED');
  });
});

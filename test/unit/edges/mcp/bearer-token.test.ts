import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { bearerTokenHolder, bearerTokenMatches, bearerTokenRefusal } from '../../../../edges/mcp/bearer-token.js';

describe('the MCP bearer token', () => {
  it('accepts the bearer token only when it matches exactly', () => {
    const token = 'the-right-token-0123456789';
    assert.equal(bearerTokenMatches(`Bearer ${token}`, token), true);
    assert.equal(bearerTokenMatches(`bearer ${token}`, token), true);
    for (const header of [
      undefined,
      '',
      'Bearer',
      'Bearer ',
      `Basic ${token}`,
      `Bearer ${token}x`,
      `Bearer ${token.slice(1)}`,
    ]) {
      assert.equal(bearerTokenMatches(header, token), false, String(header));
    }
  });

  it('names for the log what was wrong with the header, and never repeats the token it was sent', () => {
    const token = 'the-right-token-0123456789';
    assert.equal(bearerTokenRefusal(`Bearer ${token}`, token), undefined);
    assert.equal(bearerTokenRefusal(undefined, token), 'no Authorization header');
    assert.equal(bearerTokenRefusal(`Basic ${token}`, token), 'the Authorization header is not a bearer token');
    const wrong = 'a-wrong-token-9876543210';
    const reason = bearerTokenRefusal(`Bearer ${wrong}`, token) ?? '';
    assert.equal(reason, 'the bearer token does not match MCP_TOKEN');
    assert.ok(!reason.includes(wrong) && !reason.includes(token));
  });

  it('accepts the token being replaced beside the new one during a rotation, and nothing else', () => {
    const current = 'the-new-token-0123456789';
    const previous = 'the-old-token-0123456789';
    assert.equal(bearerTokenMatches(`Bearer ${current}`, [current, previous]), true);
    assert.equal(bearerTokenMatches(`Bearer ${previous}`, [current, previous]), true);
    assert.equal(bearerTokenMatches(`Bearer ${previous}`, [current, undefined]), false, 'the rotation has ended');
    assert.equal(bearerTokenMatches(`Bearer ${current}x`, [current, previous]), false);
    assert.equal(bearerTokenMatches('Bearer ', [current, previous]), false);
  });

  it('names the holder whose token was sent, never one whose token is unset, and names the setting when none matches', () => {
    const submit = 'the-submit-token-0123456789';
    const operator = 'the-operator-token-0123456789';
    const holders = { MCP_TOKEN: [submit, undefined] as const, MCP_OPERATOR_TOKEN: operator };
    assert.deepEqual(bearerTokenHolder(`Bearer ${submit}`, holders), { holder: 'MCP_TOKEN' });
    assert.deepEqual(bearerTokenHolder(`Bearer ${operator}`, holders), { holder: 'MCP_OPERATOR_TOKEN' });
    assert.deepEqual(bearerTokenHolder(`Bearer ${operator}`, { MCP_TOKEN: submit, MCP_OPERATOR_TOKEN: undefined }), {
      refusal: 'the bearer token does not match MCP_TOKEN or MCP_OPERATOR_TOKEN',
    });
    assert.equal(
      bearerTokenRefusal(`Bearer ${submit}`, operator, 'STATUS_TOKEN'),
      'the bearer token does not match STATUS_TOKEN',
    );
  });
});

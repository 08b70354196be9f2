import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { bearerTokenMatches } from '../../edges/mcp/bearer-token.js';

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
});

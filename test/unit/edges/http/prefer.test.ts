import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { requestedWaitSeconds } from '../../../../edges/http/prefer.js';

describe('Prefer: wait', () => {
  it('reads wait among other preferences, whatever the case of its name and the spaces around it', () => {
    assert.equal(requestedWaitSeconds('wait=5'), 5);
    assert.equal(requestedWaitSeconds('respond-async, WAIT = 10'), 10);
    assert.equal(requestedWaitSeconds('return=minimal; foo="a,b", wait="3"'), 3);
    assert.equal(requestedWaitSeconds(['handling=lenient', 'wait=7']), 7, 'the header sent twice');
  });

  it('counts only the first wait when it is listed twice', () => {
    assert.equal(requestedWaitSeconds('wait=4, wait=9'), 4);
    assert.equal(requestedWaitSeconds('wait=abc, wait=9'), undefined);
  });

  it('ignores a wait that is not a whole number of seconds above zero, or no wait at all', () => {
    for (const header of ['wait=abc', 'wait=0', 'wait=-1', 'wait=1.5', 'wait=', 'wait', 'wait=1e3', 'waiting=5']) {
      assert.equal(requestedWaitSeconds(header), undefined, header);
    }
    assert.equal(requestedWaitSeconds(undefined), undefined);
    assert.equal(requestedWaitSeconds('respond-async'), undefined);
    assert.equal(requestedWaitSeconds('"wait=5"'), undefined, 'a quoted string is not a preference name');
  });
});

import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { transactionTimers } from '../../../activities/order-write.js';
import { isTemporalUnreachable } from '../../../services/temporal/connection.js';

describe('write transaction timers', () => {
  it('end the transaction well inside the activity start-to-close, so no attempt commits after it', () => {
    for (const startToClose of [1_000, 4_000, 5_000, 30_000]) {
      const { maxWait, timeout } = transactionTimers(startToClose);
      assert.ok(maxWait > 0 && timeout > 0);
      assert.ok(maxWait + timeout <= startToClose * 0.8, `${maxWait} + ${timeout} for ${startToClose}`);
    }
  });
});

describe('Temporal start failures', () => {
  const grpc = (code: number, message: string) =>
    Object.assign(new Error('Failed to start Workflow'), { cause: Object.assign(new Error(message), { code }) });

  it('treats a deadline or a refused connection as unreachable: answered 503, redelivering is safe', () => {
    const late = grpc(4, '4 DEADLINE_EXCEEDED: Deadline exceeded after 5.001s,remote_addr=127.0.0.1:7233');
    const refused = grpc(14, '14 UNAVAILABLE: No connection established. Last error: connect ECONNREFUSED');
    assert.equal(isTemporalUnreachable(late), true);
    assert.equal(isTemporalUnreachable(refused), true);
  });

  it('does not call a refusal by the server "unreachable"', () => {
    assert.equal(isTemporalUnreachable(grpc(3, '3 INVALID_ARGUMENT: search attribute not registered')), false);
  });
});

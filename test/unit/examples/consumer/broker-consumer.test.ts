import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { unrecoverableBrokerFailure } from '../../../../examples/consumer/broker-consumer.js';

describe('which broker failures the RabbitMQ consumer stops on', () => {
  const replyError = (message: string, code?: number) => Object.assign(new Error(message), code ? { code } : {});

  it('stops on refusals that come back the same on every attempt', () => {
    const forGood = [
      replyError(
        'Handshake terminated by server: 403 (ACCESS-REFUSED) with message "ACCESS_REFUSED - Login was refused"',
      ),
      replyError('Operation failed: QueueDeclare; 406 (PRECONDITION-FAILED) with message "inequivalent arg"', 406),
      replyError('Operation failed: QueueDeclare; 403 (ACCESS-REFUSED) with message "access to queue refused"', 403),
      replyError('Connection closed: 530 (NOT-ALLOWED) with message "NOT_ALLOWED - vhost v not found"', 530),
      replyError('Expected ConnectionOpenOk; got <ConnectionClose channel:0>'),
      new TypeError('Unknown type to encode: undefined'),
    ];
    for (const error of forGood) assert.ok(unrecoverableBrokerFailure(error), error.message);
    assert.match(unrecoverableBrokerFailure(forGood[1]) ?? '', /406 PRECONDITION_FAILED/);
  });

  it('tries again after failures that pass', () => {
    const passing = [
      Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5672'), { code: 'ECONNREFUSED' }),
      replyError('Connection closed: 320 (CONNECTION-FORCED) with message "broker forced connection closure"', 320),
      replyError('Socket closed abruptly during opening handshake'),
      replyError('Heartbeat timeout'),
      'not an error',
    ];
    for (const error of passing) assert.equal(unrecoverableBrokerFailure(error), undefined, String(error));
  });
});

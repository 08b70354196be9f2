import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { describe, it } from 'node:test';
import pino from 'pino';
import { temporalLoggerFor } from '../../../../services/temporal/runtime.js';

/** A pino logger at `level` whose JSON lines are collected. */
function capturingLogger(level: string) {
  const lines: Record<string, unknown>[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      lines.push(JSON.parse(chunk.toString('utf8')) as Record<string, unknown>);
      done();
    },
  });
  return { log: pino({ name: 'worker', level }, sink), lines };
}

describe("the worker's Temporal logs", () => {
  it('come out as the process JSON lines, filtered at LOG_LEVEL', () => {
    const { log, lines } = capturingLogger('warn');
    const temporal = temporalLoggerFor(log);
    assert.equal(temporal.level, 'WARN', "the SDK (and its core's log filter) gets the process's level");
    temporal.info('order committed', { idempotencyKey: 'oa:AP-1:MAIN' });
    temporal.warn('order write failed', { idempotencyKey: 'oa:AP-1:MAIN' });
    assert.deepEqual(
      lines.map((line) => [line.level, line.name, line.msg, line.idempotencyKey]),
      [[40, 'worker', 'order write failed', 'oa:AP-1:MAIN']],
    );
  });

  it("keep an SDK error's message and stack (as pino's err)", () => {
    const { log, lines } = capturingLogger('info');
    temporalLoggerFor(log).error('Activity failed', {
      error: new Error('connection reset'),
      activityType: 'writeOrder',
    });
    const [line] = lines;
    assert.equal(line?.activityType, 'writeOrder');
    const err = line?.err as { message?: string; stack?: string } | undefined;
    assert.equal(err?.message, 'connection reset');
    assert.match(err?.stack ?? '', /connection reset/);
  });
});

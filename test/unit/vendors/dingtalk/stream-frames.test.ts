import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { createDingTalkConnector } from '../../../../vendors/dingtalk/connector.js';
import { readDingTalkEvent } from '../../../../vendors/dingtalk/approval-event.js';
import { eventAck, parseDownstreamFrame, pingEcho } from '../../../../vendors/dingtalk/stream-frames.js';
import {
  dingtalkApprovalPayload,
  dingtalkCallback,
  randomDingTalkAesKey,
} from '../../../../tools/harness/fake-dingtalk.js';

const word = fc.string({ minLength: 1, maxLength: 40 });
/** A frame's id as DingTalk gives one. */
const frameId = fc.stringMatching(/^[A-Za-z0-9._:-]{1,128}$/);
const REASONS = [
  'not JSON',
  'not a JSON object',
  'no headers',
  'an EVENT frame without a messageId of its form',
  'a CALLBACK frame without a messageId of its form',
  'an unknown frame type',
];

describe('DingTalk Stream frames', () => {
  it('reads any text without throwing: a frame of the protocol, or invalid', () => {
    const anyText = fc.oneof(
      fc.string(),
      fc.json(),
      fc
        .record(
          {
            type: fc.oneof(fc.constantFrom('SYSTEM', 'EVENT', 'CALLBACK'), fc.anything()),
            headers: fc.anything(),
            data: fc.anything(),
          },
          { requiredKeys: [] },
        )
        .map((frame) => JSON.stringify(frame) ?? ''),
    );
    fc.assert(
      fc.property(anyText, (text) => {
        const frame = parseDownstreamFrame(text);
        assert.ok(['SYSTEM', 'EVENT', 'CALLBACK', 'invalid'].includes(frame.type));
        // A refusal never repeats what it was given: its reason is one of a few fixed sentences.
        if (frame.type === 'invalid') assert.ok(REASONS.includes(frame.reason), frame.reason);
      }),
    );
  });

  it('reads an EVENT frame’s messageId, eventType, eventId and data as DingTalk sends them', () => {
    fc.assert(
      fc.property(frameId, word, word, fc.string(), (messageId, eventType, eventId, data) => {
        const text = JSON.stringify({
          specVersion: '1.0',
          type: 'EVENT',
          headers: {
            messageId,
            eventType,
            eventId,
            topic: eventType,
            time: 1_700_000_000_000,
            contentType: 'application/json',
          },
          data,
        });
        assert.deepEqual(parseDownstreamFrame(text), { type: 'EVENT', messageId, eventType, eventId, data });
      }),
    );
  });

  it('refuses an EVENT frame without a messageId: it could not be acknowledged', () => {
    assert.deepEqual(parseDownstreamFrame(JSON.stringify({ type: 'EVENT', headers: { eventId: 'e' }, data: '{}' })), {
      type: 'invalid',
      reason: 'an EVENT frame without a messageId of its form',
    });
  });

  it('refuses a frame whose messageId is not of its form: nothing unbounded reaches an answer or the log', () => {
    for (const messageId of ['m'.repeat(129), 'two words', 'line\nbreak', '']) {
      for (const type of ['EVENT', 'CALLBACK']) {
        assert.equal(
          parseDownstreamFrame(JSON.stringify({ type, headers: { messageId, topic: 't' }, data: '{}' })).type,
          'invalid',
          `${type} ${JSON.stringify(messageId.slice(0, 20))}`,
        );
      }
    }
  });

  it('acknowledges with the frame’s messageId and the status in data', () => {
    for (const status of ['SUCCESS', 'LATER'] as const) {
      const ack = JSON.parse(eventAck('m-1', status)) as {
        code: number;
        headers: Record<string, string>;
        data: string;
      };
      assert.equal(ack.code, 200);
      assert.deepEqual(ack.headers, { contentType: 'application/json', messageId: 'm-1' });
      assert.equal((JSON.parse(ack.data) as { status: string }).status, status);
    }
  });

  it('echoes a ping’s headers and data', () => {
    const ping = parseDownstreamFrame(
      JSON.stringify({ type: 'SYSTEM', headers: { topic: 'ping', messageId: 'p-1' }, data: '{"opaque":"x"}' }),
    );
    assert.equal(ping.type, 'SYSTEM');
    if (ping.type !== 'SYSTEM') return;
    assert.deepEqual(JSON.parse(pingEcho(ping)), {
      code: 200,
      headers: { topic: 'ping', messageId: 'p-1' },
      message: 'OK',
      data: '{"opaque":"x"}',
    });
  });
});

describe('a DingTalk approval event read the same through either door', () => {
  const options = { token: 'tok-7', aesKey: randomDingTalkAesKey(), appKey: 'dingappkey0007' };
  const connector = createDingTalkConnector({ ...options, toleranceSeconds: 300 });

  it('the HTTP callback and the Stream frame of one event give the same approval event', () => {
    const change = fc.record({
      processInstanceId: word,
      type: fc.constantFrom('start', 'finish', 'terminate', 'delete', 'comment'),
      result: fc.option(fc.constantFrom('agree', 'refuse', 'redirect'), { nil: undefined }),
      eventId: word,
    });
    fc.assert(
      fc.property(change, ({ eventId, ...event }) => {
        const payload = dingtalkApprovalPayload({ ...event, eventId });
        const callback = connector.read(dingtalkCallback(payload, options));
        // The Stream's data has the same fields; its type and id come in the frame's headers.
        const { EventType, EventId: _id, ...data } = payload;
        const frame = readDingTalkEvent(String(EventType), data, eventId);
        assert.equal(callback.kind, 'event');
        assert.equal(frame.kind, 'event');
        if (callback.kind === 'event' && frame.kind === 'event') assert.deepEqual(frame.event, callback.event);
      }),
    );
  });

  it('an event of another type is other, and an approval event without its instance is unusable', () => {
    assert.deepEqual(readDingTalkEvent('user_add_org', {}, 'e-1'), { kind: 'other', eventType: 'user_add_org' });
    assert.equal(readDingTalkEvent('bpms_instance_change', { type: 'finish' }, 'e-2').kind, 'unusable');
  });
});

// The pure parts of Feishu's long connection: the one reader both doors use reads the approval
// event in either schema as the same approval; the SDK's log lines reach the log without the
// endpoint's ticket or the app secret; and the fake's frames are the SDK's frames, byte for byte,
// checked against the generated code the SDK itself encodes and decodes with.
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import pino from 'pino';
import { readFeishuEvent } from '../../../../vendors/feishu/event.js';
import { filteredSdkLogger } from '../../../../vendors/feishu/long-connection.js';
import { scrubbed } from '../../../../domain-node/redact-url.js';
import { feishuApprovalPayload, feishuApprovalPayloadV2 } from '../../../../tools/harness/fake-feishu.js';
import { decodeFrame, encodeFrame, type Frame } from '../../../../tools/harness/fake-feishu-long-connection.js';

/** The SDK's own generated `pbbp2` (its bundle registers it in the protobufjs root it loads). */
function sdkFrames(): {
  Frame: { encode(frame: unknown): { finish(): Uint8Array }; decode(bytes: Uint8Array): Frame };
} {
  const require = createRequire(import.meta.url);
  const sdkEntry = require.resolve('@larksuiteoapi/node-sdk');
  require(sdkEntry);
  const minimal = createRequire(sdkEntry)('protobufjs/minimal') as {
    roots: { default: { pbbp2: ReturnType<typeof sdkFrames> } };
  };
  return minimal.roots.default.pbbp2;
}

const levelAndMessage = (line: string): [number, string] => {
  const { level, msg } = JSON.parse(line) as { level: number; msg: string };
  return [level, msg];
};

const statuses = fc.constantFrom('PENDING', 'APPROVED', 'REJECTED', 'CANCELED', 'DELETED', 'REVERTED');
const ids = fc.string({ minLength: 1, maxLength: 40 });

describe('the Feishu event reader both doors share', () => {
  it('reads the approval event of schema 1.0 and of schema 2.0 as the same approval', () => {
    fc.assert(
      fc.property(ids, ids, ids, statuses, (eventId, instanceCode, approvalCode, status) => {
        const v1 = readFeishuEvent(feishuApprovalPayload({ uuid: eventId, instanceCode, status, approvalCode }));
        const v2 = readFeishuEvent(feishuApprovalPayloadV2({ eventId, instanceCode, status, approvalCode }));
        assert.equal(v1.kind, 'event');
        assert.equal(v2.kind, 'event');
        if (v1.kind !== 'event' || v2.kind !== 'event') return;
        assert.deepEqual(v2.event, { ...v1.event, eventType: 'approval.instance.status_changed_v4' });
        assert.deepEqual(
          [v1.event.eventId, v1.event.instanceId, v1.event.definitionCode, v1.event.eventType],
          [eventId, instanceCode, approvalCode, 'approval_instance'],
        );
      }),
      { numRuns: 200 },
    );
  });

  it('tells other events and approval events without their ids apart, in both schemas', () => {
    const task = feishuApprovalPayload({ instanceCode: 'I-1', status: 'PENDING' });
    (task.event as Record<string, unknown>).type = 'approval_task';
    assert.deepEqual(readFeishuEvent(task), { kind: 'other', eventType: 'approval_task' });
    const message = { schema: '2.0', header: { event_id: 'e', event_type: 'im.message.receive_v1' }, event: {} };
    assert.deepEqual(readFeishuEvent(message), { kind: 'other', eventType: 'im.message.receive_v1' });
    // A 1.0 type inside a 2.0 envelope is not the 2.0 approval event.
    const mixed = feishuApprovalPayloadV2({ instanceCode: 'I-1', status: 'APPROVED' });
    (mixed.header as Record<string, unknown>).event_type = 'approval_instance';
    assert.equal(readFeishuEvent(mixed).kind, 'other');

    const noId = feishuApprovalPayloadV2({ instanceCode: 'I-1', status: 'APPROVED' });
    delete (noId.header as Record<string, unknown>).event_id;
    assert.deepEqual(readFeishuEvent(noId), {
      kind: 'unusable',
      reason: 'approval.instance.status_changed_v4 event without a header.event_id',
    });
    const noInstance = feishuApprovalPayloadV2({ instanceCode: 'I-1', status: 'APPROVED' });
    delete (noInstance.event as Record<string, unknown>).instance_code;
    assert.deepEqual(readFeishuEvent(noInstance), {
      kind: 'unusable',
      reason: 'approval.instance.status_changed_v4 event without an instance_code',
    });
  });
});

describe('what the SDK logs of the connection', () => {
  const hex = fc.stringMatching(/^[0-9a-f]{16,40}$/);

  it('keeps no ticket, access key or app secret in any line, however the SDK words it', () => {
    fc.assert(
      fc.property(hex, hex, hex, fc.constantFrom('ws', 'wss'), (ticket, accessKey, secret, scheme) => {
        const url = `${scheme}://msg-frontier.feishu.cn/ws/v2?fpid=493&device_id=7&access_key=${accessKey}&service_id=1&ticket=${ticket}`;
        for (const line of [
          `[ws] get connect config success, ws url: ${url}`,
          `pullConnectConfig failed for ${url}: AppSecret=${secret}`,
          `"${url}"`,
        ]) {
          const clean = scrubbed(line, [secret]);
          for (const value of [ticket, accessKey, secret]) assert.ok(!clean.includes(value), clean);
          assert.match(clean, /ticket=REDACTED/);
        }
      }),
      { numRuns: 200 },
    );
  });

  it('writes each SDK call as one line at the level it maps to, its errors as warnings', () => {
    const written: [number, string][] = [];
    const log = pino({ level: 'trace' }, { write: (line: string) => void written.push(levelAndMessage(line)) });
    const logger = filteredSdkLogger(log, ['s3cret']);
    logger.error(['[ws]', 'ws connect failed', new Error('s3cret leaked')]);
    logger.info(['[ws]', 'reconnect']);
    logger.trace(['[ws]', 'ping success']);
    assert.deepEqual(written, [
      [pino.levels.values.warn, '[ws] ws connect failed REDACTED leaked'],
      [pino.levels.values.debug, '[ws] reconnect'],
      [pino.levels.values.trace, '[ws] ping success'],
    ]);
  });
});

describe('the fake long-connection service speaks the SDK’s frames', () => {
  const frames = fc
    .record({
      SeqID: fc.nat(),
      LogID: fc.nat(),
      service: fc.integer({ min: 0, max: 2 ** 31 - 1 }),
      method: fc.constantFrom(0, 1),
      headers: fc.array(
        fc.record({ key: fc.string(), value: fc.string() }).map(({ key, value }) => ({ key, value })),
        { maxLength: 6 },
      ),
      payload: fc.uint8Array({ maxLength: 64 }),
    })
    .map((frame): Frame & { payload: Uint8Array } => ({ ...frame }));

  it('a frame the fake encodes decodes with the SDK’s generated code, and the other way round', () => {
    const sdk = sdkFrames();
    fc.assert(
      fc.property(frames, (frame) => {
        const bySdk = sdk.Frame.decode(encodeFrame(frame));
        assert.deepEqual(
          [bySdk.SeqID, bySdk.LogID, bySdk.service, bySdk.method],
          [frame.SeqID, frame.LogID, frame.service, frame.method],
        );
        assert.deepEqual(
          bySdk.headers.map(({ key, value }) => ({ key, value })),
          frame.headers,
        );
        assert.deepEqual(Buffer.from(bySdk.payload ?? []), Buffer.from(frame.payload));
        const byFake = decodeFrame(sdk.Frame.encode(frame).finish());
        assert.deepEqual(
          { ...byFake, payload: Buffer.from(byFake.payload ?? []) },
          {
            ...frame,
            payload: Buffer.from(frame.payload),
          },
        );
      }),
      { numRuns: 200 },
    );
  });
});

// The doors an approval can come through in the burst: the signed webhook, or an OA vendor's
// callback route (Feishu, DingTalk) with the vendor's fake open API behind it, which the order's
// form is read from. A door says what the API needs to open it, what one delivery of an approval
// carries (the same on every resend, as the OA resends it), how each attempt is signed, and what
// the sender counts as taken. The vendors' own reply deadlines are the senders' timeouts.
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import {
  approvedDingTalkOrder,
  dingtalkApprovalPayload,
  dingtalkCallback,
  dingtalkSettings,
  randomDingTalkAesKey,
  startFakeDingTalk,
} from '../harness/fake-dingtalk.js';
import { approvedFeishuOrder, feishuApprovalPayload, feishuCallback, startFakeFeishu } from '../harness/fake-feishu.js';
import { approvalBody, SKUS } from './approvals.js';
import { signedHeaders } from '../harness/signed-webhook.js';
import { FEISHU_REPLY_DEADLINE_MS } from '../../vendors/feishu/connector.js';
import { DINGTALK_REPLY_DEADLINE_MS } from '../../vendors/dingtalk/connector.js';

export const BURST_DOORS = ['webhook', 'feishu', 'dingtalk'] as const;
export type BurstDoorName = (typeof BURST_DOORS)[number];

/** One attempt's request, signed at the moment it is sent. */
export interface DoorRequest {
  path: string;
  headers: Record<string, string>;
  body: string;
}

export interface BurstDoor {
  name: BurstDoorName;
  /** The settings that open the door (and let the worker read the vendor's form). */
  env: Record<string, string>;
  /** How long the sender waits for an answer; undefined: the webhook's WEBHOOK_START_TIMEOUT_MS. */
  timeoutMs: number | undefined;
  /** The statuses that tell the sender its delivery was taken. */
  accepted: ReadonlySet<number>;
  /** What every delivery of this approval carries; a vendor door also registers its form. */
  approval(approvalNo: string): string;
  request(payload: string): DoorRequest;
  close(): Promise<void>;
}

const randomSku = () => SKUS[Math.floor(Math.random() * SKUS.length)] as string;

export function webhookDoor(secret: string): BurstDoor {
  return {
    name: 'webhook',
    env: {},
    timeoutMs: undefined,
    accepted: new Set([200, 201, 202]),
    approval: (approvalNo) => JSON.stringify(approvalBody(approvalNo)),
    request: (payload) => ({ path: '/webhooks/oa/approvals', headers: signedHeaders(payload, secret), body: payload }),
    close: () => Promise.resolve(),
  };
}

/**
 * A fake vendor answers plain http:// on the loopback, which production refuses for a vendor's API
 * (services/config/production-refusals.ts): its door runs the API outside production, which
 * changes nothing else the bench measures (the same entry points, the same settings otherwise).
 */
const FAKE_VENDOR = { NODE_ENV: 'test' } as const;

/** The example mapping, written where the API can read it. */
function mappingFile(): string {
  const file = path.join(mkdtempSync(path.join(os.tmpdir(), 'bench-mapping-')), 'oa-form-mapping.json');
  writeFileSync(file, readFileSync(path.resolve('examples/oa-form-mapping.json')));
  return file;
}

export async function feishuDoor(): Promise<BurstDoor> {
  const fake = await startFakeFeishu();
  const encryptKey = randomBytes(16).toString('hex');
  const token = randomBytes(12).toString('hex');
  return {
    name: 'feishu',
    env: {
      ...FAKE_VENDOR,
      OA_FORM_MAPPING: mappingFile(),
      FEISHU_APP_ID: fake.appId,
      FEISHU_APP_SECRET: fake.appSecret,
      FEISHU_ENCRYPT_KEY: encryptKey,
      FEISHU_VERIFICATION_TOKEN: token,
      FEISHU_API_BASE_URL: fake.url,
    },
    timeoutMs: FEISHU_REPLY_DEADLINE_MS, // the sender gives up on an answer after the vendor's deadline
    accepted: new Set([200]),
    approval(approvalNo) {
      fake.register(approvalNo, approvedFeishuOrder(randomSku(), 1, 10));
      return JSON.stringify(feishuApprovalPayload({ instanceCode: approvalNo, status: 'APPROVED' }));
    },
    request(payload) {
      const built = feishuCallback(JSON.parse(payload) as Record<string, unknown>, { encryptKey, token });
      return { path: '/webhooks/feishu', headers: built.headers, body: built.rawBody.toString('utf8') };
    },
    close: () => fake.close(),
  };
}

export async function dingtalkDoor(): Promise<BurstDoor> {
  const fake = await startFakeDingTalk();
  const aesKey = randomDingTalkAesKey();
  const token = randomBytes(12).toString('hex');
  return {
    name: 'dingtalk',
    env: { ...FAKE_VENDOR, ...dingtalkSettings(fake, { aesKey, token }, mappingFile()) },
    timeoutMs: DINGTALK_REPLY_DEADLINE_MS,
    accepted: new Set([200]),
    approval(approvalNo) {
      fake.register(approvalNo, approvedDingTalkOrder(randomSku(), 1, 10, 'CUST-DT-BENCH'));
      return JSON.stringify(
        dingtalkApprovalPayload({ processInstanceId: approvalNo, type: 'finish', result: 'agree' }),
      );
    },
    request(payload) {
      const built = dingtalkCallback(JSON.parse(payload) as Record<string, unknown>, {
        aesKey,
        token,
        appKey: fake.appKey,
      });
      return {
        path: `/webhooks/dingtalk?${new URLSearchParams(built.query).toString()}`,
        headers: built.headers,
        body: built.rawBody.toString('utf8'),
      };
    },
    close: () => fake.close(),
  };
}

export function openDoor(name: BurstDoorName, secret: string): Promise<BurstDoor> {
  if (name === 'feishu') return feishuDoor();
  if (name === 'dingtalk') return dingtalkDoor();
  return Promise.resolve(webhookDoor(secret));
}

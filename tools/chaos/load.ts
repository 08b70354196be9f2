// The chaos run's load: distinct approvals through the real webhook, each redelivered 1–5 times at
// once and again after 503s and timeouts (what an OA system does), and one in four as a Feishu
// approval pushed over the long connection the API holds, 1–5 times, each push a new event; paced over
// lanes so the load overlaps the fault schedule.
import { idempotencyKeyFor } from '../../domain/idempotency-key.js';
import { signBody } from '../../domain-node/signature.js';
import { sleep } from '../harness/time.js';
import type { FaultInjector, ScheduledFault } from './faults.js';
import { between, type Random } from './prng.js';
import type { ChaosFeishu, FeishuOrder } from './feishu.js';
import { SKUS, WEBHOOK_SECRET } from './stack.js';

export interface Approval {
  /** The door it comes through: the webhook, or Feishu's long connection (its instance code is the approval number). */
  via: 'webhook' | 'feishu';
  approvalNo: string;
  operation: 'MAIN' | 'SUPPLEMENT';
  order: FeishuOrder;
  key: string;
  /** How many deliveries of it are sent at once. */
  copies: number;
  body: string;
  /** When its door first accepted it (the webhook's 202 or 200, Feishu's acknowledgement). */
  acceptedAt?: number;
}

/** A SQL LIKE pattern that matches every approval number of the seed's run. */
/** What every approval number of the run starts with. */
export const approvalNumbersOf = (seed: number) => `CH${seed}-`;

export function makeApprovals(random: Random, seed: number, size: number): Approval[] {
  return Array.from({ length: size }, (_, index) => {
    const via = index % 4 === 3 ? 'feishu' : 'webhook';
    const approvalNo = `CH${seed}-${via === 'feishu' ? 'F' : ''}${String(index).padStart(5, '0')}`;
    // A vendor's approval is always the key's MAIN order.
    const supplement = random() < 0.25;
    const operation = supplement && via === 'webhook' ? 'SUPPLEMENT' : 'MAIN';
    const lineCount = between(random, 1, 3);
    const lines = Array.from({ length: lineCount }, (_, line) => ({
      sku: SKUS[(index + line) % SKUS.length] as string,
      quantity: between(random, 1, 5),
      unitPrice: `${between(random, 1, 500)}.${String(between(random, 0, 99)).padStart(2, '0')}`,
    }));
    const order = { customerId: `CUST-${index % 17}`, lines };
    const body = JSON.stringify({
      approvalNo,
      operation,
      approvedAt: '2026-11-29T10:00:00+08:00',
      order: { customerId: order.customerId, currency: 'CNY', lines },
    });
    return {
      via,
      approvalNo,
      operation,
      order,
      key: idempotencyKeyFor(approvalNo, operation),
      copies: between(random, 1, 5),
      body,
    };
  });
}

/** The webhook's answers over the whole run. */
export interface WebhookAnswers {
  accepted: number;
  duplicate: number;
  unavailable: number;
  refused: number;
  transportErrors: number;
}

export interface WebhookSender {
  /** Delivers until accepted (202), a duplicate (200) or refused; 0 when 5 minutes were not enough. */
  post: (approval: Approval) => Promise<number>;
  answers: WebhookAnswers;
}

export function webhookSender(apiUrl: string): WebhookSender {
  const answers: WebhookAnswers = { accepted: 0, duplicate: 0, unavailable: 0, refused: 0, transportErrors: 0 };
  const post = async (approval: Approval): Promise<number> => {
    const deadline = Date.now() + 300_000;
    for (;;) {
      const timestamp = String(Math.floor(Date.now() / 1000));
      try {
        const response = await fetch(`${apiUrl}/webhooks/oa/approvals`, {
          method: 'POST',
          headers: {
            'content-type': 'application/json',
            'x-oa-timestamp': timestamp,
            'x-oa-signature': signBody(WEBHOOK_SECRET, timestamp, approval.body),
          },
          body: approval.body,
          signal: AbortSignal.timeout(15_000),
        });
        await response.arrayBuffer();
        if (response.status === 202 || response.status === 200) {
          answers[response.status === 202 ? 'accepted' : 'duplicate'] += 1;
          approval.acceptedAt ??= Date.now();
          return response.status;
        }
        if (response.status !== 503) {
          answers.refused += 1;
          return response.status;
        }
        answers.unavailable += 1;
      } catch {
        answers.transportErrors += 1;
      }
      // What an OA system does with a 503 or a timeout: redeliver later, same body.
      if (Date.now() > deadline) return 0;
      await sleep(300);
    }
  };
  return { post, answers };
}

/**
 * Submits every approval, its copies at once, over six paced lanes — about 40 s for a CI-sized
 * run, longer for big ones — and injects each scheduled fault once its count of approvals was
 * answered; those left over when the load ends are injected then.
 */
export async function submitUnderFaults(options: {
  approvals: Approval[];
  /** Sends one copy of the approval through its door. */
  deliver: (approval: Approval) => Promise<unknown>;
  schedule: ScheduledFault[];
  injector: FaultInjector;
  /** Jitters the pace; the injector draws from the same stream. */
  random: Random;
}): Promise<void> {
  const { approvals, schedule, injector, random } = options;
  const lanes = 6;
  const loadMs = Math.max(40_000, approvals.length * 300);
  const paceMs = (loadMs * lanes) / approvals.length;
  let submitted = 0;
  let nextFault = 0;
  const queue = [...approvals];
  await Promise.all(
    Array.from({ length: lanes }, async () => {
      for (let approval = queue.shift(); approval; approval = queue.shift()) {
        const began = Date.now();
        await Promise.all(Array.from({ length: approval.copies }, () => options.deliver(approval)));
        submitted += 1;
        while (nextFault < schedule.length && (schedule[nextFault]?.at ?? Infinity) <= submitted) {
          injector.inject((schedule[nextFault] as ScheduledFault).kind);
          nextFault += 1;
        }
        await sleep(Math.max(0, paceMs * (0.5 + random()) - (Date.now() - began)));
      }
    }),
  );
  while (nextFault < schedule.length) injector.inject((schedule[nextFault++] as ScheduledFault).kind);
}

/**
 * Sends one copy of an approval through its door: the webhook's sender, or a push of its instance
 * over Feishu's long connection (each push a new event), counted when it is not acknowledged.
 */
export function approvalDoors(sender: WebhookSender, feishu: ChaosFeishu) {
  const feishuPushes = { acknowledged: 0, unacknowledged: 0 };
  const deliver = async (approval: Approval): Promise<number> => {
    if (approval.via === 'webhook') return sender.post(approval);
    const acknowledged = await feishu.pushApproval(approval.approvalNo, approval.order);
    feishuPushes[acknowledged ? 'acknowledged' : 'unacknowledged'] += 1;
    if (acknowledged) approval.acceptedAt ??= Date.now();
    return 0;
  };
  return { deliver, feishuPushes };
}

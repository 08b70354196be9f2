// Feishu in the chaos run: the fake Feishu the API holds its long connection to, whose approvals
// come over that connection beside the webhook's, whose decision cards the run's operator clicks
// while deciding the same wait another way, and whose instances receive each order's receipt
// comment from the worker the run kills. What the run pushed, clicked and found is counted here.
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { isReceiptOf } from '../../domain/approval-receipts.js';
import {
  approvedFeishuInstance,
  type FakeFeishu,
  feishuApprovalPayload,
  feishuCardClickPayload,
  startFakeFeishu,
} from '../harness/fake-feishu.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const DECISION_CHAT = 'oc_chaosdecisions0000001';
const CARD_OPERATOR = 'ou_chaoscardoperator0001';
const RECEIPT_COMMENTER = 'ou_chaosreceipts00000001';

/** An approval's order as its Feishu form holds it. */
export interface FeishuOrder {
  customerId: string;
  lines: { sku: string; quantity: number; unitPrice: string }[];
}

/** What the run's clicks did: taken, told another decision stood, or answered otherwise. */
export interface CardClicks {
  taken: number;
  toldDecided: number;
  other: number;
}

export interface ChaosFeishu {
  fake: FakeFeishu;
  /** The API's and the worker's settings: the long connection, decision cards, receipts. */
  settings: Record<string, string>;
  /** Pushes an approved instance over the long connection: true once the API acknowledged it. */
  pushApproval: (instanceCode: string, order: FeishuOrder) => Promise<boolean>;
  /** The operator's click on a card's button for the key's wait: the toast it was answered with. */
  click: (button: { idempotencyKey: string; episode: string; decision: string }) => Promise<string>;
  clicks: CardClicks;
  /** Who a click of the run's card operator is recorded as deciding. */
  cardDecider: string;
  /** How many receipt comments the instance carries for `key`. */
  receiptsOn: (instanceCode: string, key: string) => number;
  close: () => Promise<void>;
}

export async function startChaosFeishu(): Promise<ChaosFeishu> {
  const fake = await startFakeFeishu();
  const clicks: CardClicks = { taken: 0, toldDecided: 0, other: 0 };
  return {
    fake,
    settings: {
      OA_FORM_MAPPING: path.join(ROOT, 'examples/oa-form-mapping.json'),
      FEISHU_EVENT_MODE: 'long-connection',
      FEISHU_APP_ID: fake.appId,
      FEISHU_APP_SECRET: fake.appSecret,
      FEISHU_API_BASE_URL: fake.url,
      FEISHU_DECISION_CHAT_ID: DECISION_CHAT,
      FEISHU_OPERATOR_OPEN_IDS: CARD_OPERATOR,
      FEISHU_RECEIPT_USER_ID: RECEIPT_COMMENTER,
      // A card's workflow sees its key decided within a second, and ends before the drain does.
      DECISION_CARD_LOOK_EVERY_MS: '1000',
    },
    pushApproval: async (instanceCode, order) => {
      fake.register(instanceCode, approvedFeishuInstance(order));
      const pushed = await fake.longConnection.push(feishuApprovalPayload({ instanceCode, status: 'APPROVED' }));
      // Feishu pushes again what was not acknowledged; the API acknowledges once the key is claimed.
      return fake.longConnection.acknowledged(pushed, 120_000).then(
        () => true,
        () => false,
      );
    },
    click: async (button) => {
      const pushed = await fake.longConnection.push(
        feishuCardClickPayload({
          appId: fake.appId,
          openId: CARD_OPERATOR,
          button,
          chatId: DECISION_CHAT,
          messageId: 'om_chaoscard',
        }),
      );
      const toast = await fake.longConnection.acknowledged(pushed, 30_000).then(
        (ack) => (ack.data as { toast?: { content?: unknown } } | undefined)?.toast?.content,
        (error: unknown) => `not answered: ${String(error)}`,
      );
      const text = typeof toast === 'string' ? toast : '';
      if (text.startsWith('Done:')) clicks.taken += 1;
      else if (text.startsWith('Already decided:')) clicks.toldDecided += 1;
      else clicks.other += 1;
      return text;
    },
    clicks,
    cardDecider: `card:feishu:${CARD_OPERATOR}`,
    receiptsOn: (instanceCode, key) =>
      fake.comments.commentsOn(instanceCode).filter((comment) => isReceiptOf(comment.text, key)).length,
    close: () => fake.close(),
  };
}

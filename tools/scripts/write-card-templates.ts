// `npm run cards`: rewrites the decision card templates under docs/cards/ — each vendor's card as it
// posts it for a key waiting for a person, the same card redrawn once decided, and the answer to a
// click — drawn from a sample key by the vendor's own code. A unit test fails while a committed
// file differs from what this writes, so the files show what the chat shows.
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { cardDecisionsFor, type DecisionCard } from '../../domain/decision-cards.js';
import { waitingEpisode } from '../../domain-node/decision-card-keys.js';
import { feishuCardJson, feishuClickReply } from '../../vendors/feishu/decision-cards.js';
import { decidedLabel, wecomCardJson } from '../../vendors/wecom/decision-cards.js';
import { dingtalkCardData, dingtalkClickAnswer } from '../../vendors/dingtalk/decision-cards.js';

export const CARD_TEMPLATES_DIR = fileURLToPath(new URL('../../docs/cards/', import.meta.url));

/** A key whose write failed for good, waiting for a decision for 42 minutes. */
export const SAMPLE_CARD: DecisionCard = {
  idempotencyKey: 'APPROVAL:PO-2026-1206-001:MAIN',
  episode: waitingEpisode('COMPENSATING', '2026-12-06T08:00:00.000Z'),
  waitingIn: 'COMPENSATING',
  customerId: 'CUST-1001',
  amount: '1280.50 CNY',
  cause: { code: 'insufficient-stock', sentence: 'A line of the order asks for more stock than is available.' },
  waitingSince: '2026-12-06T08:00:00.000Z',
  workflowUrl: 'https://temporal.example.com/namespaces/default/workflows/order-APPROVAL%3APO-2026-1206-001%3AMAIN',
  decisions: cardDecisionsFor(['resubmit', 'abandon']),
};
export const SAMPLE_NOW = Date.parse('2026-12-06T08:42:00.000Z');
const DECIDED = {
  decision: 'abandon',
  decidedBy: 'card:feishu:ou_7d8a6e6df7621556ce0d21922b676706',
  decidedAt: '2026-12-06T08:43:10.000Z',
};

/** Each template's file name and text: JSON as `JSON.stringify` writes it, two spaces. */
export function cardTemplates(): Record<string, string> {
  const text = (value: unknown) => JSON.stringify(value, null, 2) + '\n';
  return {
    'feishu-waiting.json': text(feishuCardJson(SAMPLE_CARD, { now: SAMPLE_NOW })),
    'feishu-decided.json': text(feishuCardJson(SAMPLE_CARD, { now: SAMPLE_NOW, outcome: DECIDED })),
    'feishu-click-answer.json': text(
      feishuClickReply(SAMPLE_CARD.idempotencyKey, {
        tone: 'success',
        text: `Done: abandon by ${DECIDED.decidedBy} at ${DECIDED.decidedAt}`,
        lockedAs: `abandon by ${DECIDED.decidedBy} at ${DECIDED.decidedAt}`,
      }).body,
    ),
    // DingTalk: the variables the operator's card template is given, as created and as redrawn,
    // and the answer to a click that locks the card.
    'dingtalk-waiting.json': text(dingtalkCardData(SAMPLE_CARD, { now: SAMPLE_NOW })),
    'dingtalk-decided.json': text(
      dingtalkCardData(SAMPLE_CARD, { now: SAMPLE_NOW, outcome: { ...DECIDED, decidedBy: 'card:dingtalk:manager01' } }),
    ),
    'dingtalk-click-answer.json': text(
      dingtalkClickAnswer({
        tone: 'success',
        text: `Done: abandon by card:dingtalk:manager01 at ${DECIDED.decidedAt}`,
        lockedAs: `abandon by card:dingtalk:manager01 at ${DECIDED.decidedAt}`,
      }),
    ),
    // WeCom: the template card as message/send carries it, and what every member's buttons read once decided.
    'wecom-waiting.json': text(
      wecomCardJson(SAMPLE_CARD, 'card-3f1c0e6a9b2d4c8e7f6a5b4c3d2e1f0a9b8c7d6e', { now: SAMPLE_NOW }),
    ),
    'wecom-decided.json': text({
      atall: 1,
      button: { replace_name: decidedLabel({ ...DECIDED, decidedBy: 'card:wecom:zhangsan' }) },
    }),
  };
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  mkdirSync(CARD_TEMPLATES_DIR, { recursive: true });
  for (const [name, content] of Object.entries(cardTemplates())) {
    writeFileSync(path.join(CARD_TEMPLATES_DIR, name), content);
    console.log(`wrote ${path.join('docs/cards', name)}`);
  }
}

// The decision cards as workflows. The scan, run by a schedule every minute while some vendor's
// chat gets cards, starts one card workflow per vendor and waiting episode of a key. A card
// workflow posts its card (retried under the vendor's idempotency key, so never twice), then looks
// every minute whether its key still waits in that episode; once it does not, it redraws the card
// with what became of the key, whoever decided and through whichever door. History stays short: it
// continues as new after a day of looking.
import { continueAsNew, proxyActivities, sleep } from '@temporalio/workflow';
import type * as activities from '../activities/decision-cards.js';
import type { DecisionCardInput, DecisionCardResult } from './definitions.js';

type Activities = ReturnType<typeof activities.createDecisionCardActivities>;
/** A posted card as its send answered it: the message, and what redraws it. */
type PostedCard = Awaited<ReturnType<Activities['sendDecisionCard']>>;

/** How often a card workflow looks whether its key still waits, unless its input says. */
const LOOK_EVERY_MS = 60_000;
/** Looks before the workflow continues as new with its posted card. */
const LOOKS_PER_RUN = 24 * 60;

const { startDecisionCards } = proxyActivities<Activities>({
  startToCloseTimeout: '2 minutes',
  retry: { maximumAttempts: 3, initialInterval: '10 seconds' },
  summary: 'start a card workflow for every key that waits for a person, one per vendor and episode',
});
// Within the hour Feishu remembers a post's uuid: a retry after that could post a second card, so
// the post gives up first, and the workflow fails where an operator sees it.
const { sendDecisionCard } = proxyActivities<Activities>({
  startToCloseTimeout: '30 seconds',
  scheduleToCloseTimeout: '50 minutes',
  retry: { initialInterval: '5 seconds', backoffCoefficient: 2, maximumInterval: '5 minutes' },
  summary: "post the card to the vendor's chat under its send key",
});
const { decisionCardState, refreshDecisionCard } = proxyActivities<Activities>({
  startToCloseTimeout: '30 seconds',
  retry: { initialInterval: '5 seconds', backoffCoefficient: 2, maximumInterval: '5 minutes' },
});

export async function decisionCardScanWorkflow(): Promise<{ waiting: number; started: number }> {
  return startDecisionCards();
}

/** `posted`: the message of a card posted by an earlier run of this workflow (continued as new). */
export async function decisionCardWorkflow(input: DecisionCardInput, posted?: PostedCard): Promise<DecisionCardResult> {
  const message = posted ?? (await sendDecisionCard(input));
  for (let look = 0; look < LOOKS_PER_RUN; look += 1) {
    const state = await decisionCardState(input.card);
    if (!state.waiting) {
      await refreshDecisionCard({ vendor: input.vendor, posted: message, card: input.card, outcome: state.outcome });
      return { messageId: message.messageId, outcome: state.outcome };
    }
    await sleep(input.lookEveryMs ?? LOOK_EVERY_MS);
  }
  return continueAsNew<typeof decisionCardWorkflow>(input, message);
}

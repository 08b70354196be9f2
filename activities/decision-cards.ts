// The decision cards' steps: find the keys that wait for a person and start one card workflow per
// vendor and waiting episode (its id says which: a second start of the same episode is refused by
// Temporal, so a card is sent once however often the scan runs); post a card under the vendor's
// own idempotency key; read whether the key still waits in that episode, and what became of it;
// redraw the posted card with that. Each is safe to run again: the post's key and the workflow id
// keep a retry from making a second card.
import { Context, log } from '@temporalio/activity';
import { type Client, WorkflowExecutionAlreadyStartedError } from '@temporalio/client';
import {
  type CardOutcome,
  cardDecisionsFor,
  type DecisionCard,
  decisionCardWorkflowId,
  temporalUiWorkflowUrl,
} from '../domain/decision-cards.js';
import { classifyError, publicCauseOfWaiting } from '../domain/error-classification.js';
import type { OaVendor } from '../domain/oa-approval.js';
import { cardSendKey, waitingEpisode } from '../domain-node/decision-card-keys.js';
import type { PrismaClient } from '../services/db/prisma-client.js';
import type { ProductMetrics } from '../services/metrics/product-metrics.js';
import { type AwaitingDecision, listOrdersAwaitingDecision } from '../submission/operator-decisions/awaiting.js';
import { episodeOutcome } from '../submission/operator-decisions/cards.js';
import type { CardRefresh, DecisionCardSender, PostedCard } from '../vendors/decision-cards.js';
import { toActivityFailure } from './activity-failure.js';
import type { DecisionCardInput } from '../workflows/definitions.js';

/** The most keys one scan looks at: the longest waiting first, the rest at the next scan. */
const SCAN_LIMIT = 200;
/**
 * The card workflows this worker knows to exist, remembered so that a key waiting for hours costs
 * no start request a minute; forgotten all at once past this many (one start request each, again).
 */
const KNOWN_CARDS_LIMIT = 10_000;

/** What the key of a card looks like now: still waiting in its episode, or moved on. */
export type CardState = { waiting: true } | { waiting: false; outcome: CardOutcome };

/** The database steps the cards read: the waiting keys, and what became of an episode. */
export const decisionCardDatabase = { listOrdersAwaitingDecision, episodeOutcome };

export function createDecisionCardActivities(deps: {
  prisma: PrismaClient;
  temporal: Client;
  taskQueue: string;
  /** The vendors whose chat gets cards, each with its sender; empty: no cards. */
  senders: ReadonlyMap<OaVendor, DecisionCardSender>;
  /** How often a card's workflow looks whether its key still waits; default the workflow's. */
  lookEveryMs?: number | undefined;
  metrics: ProductMetrics;
  /** The Temporal UI a card links its key's workflow in, and the namespace; undefined: no link. */
  temporalUi?: { url: string; namespace: string } | undefined;
  /** The database steps; a unit test stands them in, everything else runs these. */
  database?: typeof decisionCardDatabase;
}) {
  const { prisma, temporal, taskQueue, senders, lookEveryMs, metrics } = deps;
  const database = deps.database ?? decisionCardDatabase;
  // From the start, so that the first failed post is an increase the alert rule sees.
  metrics.decisionCardStepsAtZero([...senders.keys()]);
  const knownCards = new Set<string>();

  /** The card of one waiting key as every vendor shows it: the cause classified, never the raw error. */
  function cardOf(entry: AwaitingDecision, episode: string): DecisionCard {
    const told = publicCauseOfWaiting(entry.status, entry.reason);
    return {
      idempotencyKey: entry.idempotencyKey,
      episode,
      waitingIn: entry.status,
      customerId: entry.customerId,
      amount: entry.totalAmount ? `${entry.totalAmount} ${entry.currency}` : '',
      cause: { code: told.code, sentence: told.message },
      waitingSince: entry.waitingSince,
      ...(deps.temporalUi
        ? { workflowUrl: temporalUiWorkflowUrl(deps.temporalUi.url, deps.temporalUi.namespace, entry.workflowId) }
        : {}),
      decisions: cardDecisionsFor(entry.nextActions),
    };
  }

  /**
   * Starts the card workflow of every waiting key's episode at every vendor with cards; an episode
   * whose workflow exists (running, or closed once decided) is left alone. Returns how many started.
   */
  async function startDecisionCards(): Promise<{ waiting: number; started: number }> {
    if (senders.size === 0) return { waiting: 0, started: 0 };
    const waiting = await database.listOrdersAwaitingDecision(prisma, SCAN_LIMIT);
    let started = 0;
    for (const entry of waiting) {
      const episode = waitingEpisode(entry.status, entry.waitingSince);
      for (const vendor of senders.keys()) {
        const workflowId = decisionCardWorkflowId(vendor, entry.idempotencyKey, episode);
        if (knownCards.has(workflowId)) continue;
        const input: DecisionCardInput = {
          vendor,
          card: cardOf(entry, episode),
          sendKey: cardSendKey(vendor, entry.idempotencyKey, episode),
          ...(lookEveryMs === undefined ? {} : { lookEveryMs }),
        };
        try {
          await temporal.workflow.start('decisionCardWorkflow', {
            workflowId,
            taskQueue,
            args: [input],
            workflowIdReusePolicy: 'REJECT_DUPLICATE',
            staticSummary: `Decision card for ${entry.idempotencyKey} (${entry.status}) in ${vendor}`,
          });
          started += 1;
        } catch (error) {
          if (!(error instanceof WorkflowExecutionAlreadyStartedError)) throw error;
        }
        if (knownCards.size >= KNOWN_CARDS_LIMIT) knownCards.clear();
        knownCards.add(workflowId);
      }
    }
    if (started > 0) log.info('decision cards started', { started, waiting: waiting.length });
    return { waiting: waiting.length, started };
  }

  function senderOf(vendor: OaVendor): DecisionCardSender {
    const sender = senders.get(vendor);
    // This worker has no cards for the vendor (its settings changed): a retry on another may.
    if (!sender) throw new Error(`no decision cards configured for ${vendor} on this worker`);
    return sender;
  }

  /**
   * Posts the card under its send key: a retry posts no second card while the vendor remembers the
   * key. A failure is retried as the classification table says (a refusal is not).
   */
  async function sendDecisionCard(input: DecisionCardInput): Promise<PostedCard> {
    const { attempt } = Context.current().info;
    try {
      const posted = await senderOf(input.vendor).send(input.card, input.sendKey, { retried: attempt > 1 });
      metrics.decisionCardStep(input.vendor, 'sent');
      return posted;
    } catch (error) {
      metrics.decisionCardStep(input.vendor, 'send_failed');
      throw toActivityFailure(error, attempt);
    }
  }

  /**
   * Whether the card's key still waits in its episode — the same state since the same moment — and
   * if not, what became of it (submission/operator-decisions/cards.ts, the clicks' answer too).
   */
  async function decisionCardState(card: DecisionCard): Promise<CardState> {
    const outcome = await database.episodeOutcome(prisma, card);
    return outcome ? { waiting: false, outcome } : { waiting: true };
  }

  /** Redraws the posted card with what became of its key. */
  async function refreshDecisionCard(input: {
    vendor: OaVendor;
    posted: PostedCard;
    card: DecisionCard;
    outcome: CardOutcome;
  }): Promise<void> {
    const { attempt } = Context.current().info;
    let refreshed: CardRefresh;
    try {
      refreshed = await senderOf(input.vendor).refresh(input.posted, input.card, input.outcome);
    } catch (error) {
      // A refusal would be the same on every retry: the card is left as it is, and its workflow ends.
      if (classifyError(error).retryable) throw toActivityFailure(error, attempt);
      log.warn('decision card left as it is: its vendor refused the redraw', {
        vendor: input.vendor,
        errorClass: classifyError(error).errorClass,
      });
      return;
    }
    if (refreshed === 'updated') metrics.decisionCardStep(input.vendor, 'updated');
    else log.info('decision card left as it is: its vendor takes no update of it any more', { vendor: input.vendor });
  }

  return { startDecisionCards, sendDecisionCard, decisionCardState, refreshDecisionCard };
}

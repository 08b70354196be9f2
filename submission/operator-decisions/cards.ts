// Decisions taken from a chat card: a click is a decision through the same functions the CLI and
// the MCP operator tools call, recorded as `card:<vendor>:<user id>`, taken once. Only a person on
// the vendor's operator list decides. A click decides only the waiting episode its card was sent
// for: once the key moved on — decided through any door, or waiting again in a new episode with a
// card of its own — the click is answered with what became of that episode, and nothing is taken.
// Whoever decides first wins; a second click, a redelivered one, or one beside a CLI decision is
// answered "already decided by … at …".
import { type CardClickReply, type CardOutcome, cardDecisionsFor, outcomeLine } from '../../domain/decision-cards.js';
import { decidedThrough } from '../../domain/decided-by.js';
import type { OaVendor } from '../../domain/oa-approval.js';
import { clearKeySourceConflicts } from '../../services/db/key-source-conflicts.js';
import type { PrismaClient } from '../../services/db/prisma-client.js';
import { type AwaitingStatus, listOrdersAwaitingDecision, NEXT_ACTIONS } from './awaiting.js';
import { resubmit } from './claims.js';
import { decideCompensation, recompensate } from './compensation.js';
import { decideDelivery } from './delivery.js';
import { raceDeadline } from '../deadline.js';
import type { CardClickResult, ProductMetrics } from '../../services/metrics/product-metrics.js';
import type { ApprovalEventConfig, ApprovalEventsInFlight } from '../accept-oa-event.js';
import { NoPendingDecisionError, type OperatorDeps } from './shared.js';

/** One click on a card's button, as the vendor's door read it from a verified callback. */
export interface CardClick {
  vendor: OaVendor;
  /** Who clicked, in the vendor's ids (Feishu's open id, DingTalk's and WeCom's user id). */
  userId: string;
  idempotencyKey: string;
  /** The waiting episode the card was sent for (domain-node/decision-card-keys.ts). */
  episode: string;
  decision: string;
}

/** What a click is answered with: the toast the clicker sees, and how the card then reads. */
export type CardAnswer =
  | { kind: 'decided'; outcome: CardOutcome }
  | { kind: 'already decided'; outcome: CardOutcome }
  | { kind: 'not an operator' }
  | { kind: 'not offered'; reason: string };

/** A waiting episode as its name says it: `<state in lower case, - for _>-<began, base 36 ms>`. */
export function episodeParts(episode: string): { waitingIn: string; waitingSince: string } | undefined {
  const match = /^([a-z-]+)-([0-9a-z]{1,12})$/.exec(episode);
  if (!match) return undefined;
  const began = Number.parseInt(match[2] as string, 36);
  if (!Number.isSafeInteger(began)) return undefined;
  return {
    waitingIn: (match[1] as string).toUpperCase().replaceAll('-', '_'),
    waitingSince: new Date(began).toISOString(),
  };
}

/** The episodes the key waits in now, as the awaiting list names them (none: it waits for nobody). */
async function currentEpisodes(
  prisma: PrismaClient,
  key: string,
): Promise<{ waitingIn: string; waitingSince: string }[]> {
  const waiting = await listOrdersAwaitingDecision(prisma, 10, { idempotencyKey: key });
  return waiting.map((entry) => ({ waitingIn: entry.status, waitingSince: entry.waitingSince }));
}

/**
 * What became of a key that waited in `waitingIn` since `waitingSince`: undefined while it still
 * waits there; else the decision and who took it when recorded (an operator's decision on its
 * compensation, the clearing of its conflict), or the status it moved to.
 */
export async function episodeOutcome(
  prisma: PrismaClient,
  episode: { idempotencyKey: string; waitingIn: string; waitingSince: string },
): Promise<CardOutcome | undefined> {
  const key = episode.idempotencyKey;
  if (episode.waitingIn === 'KEY_SOURCE_CONFLICT') {
    const conflicts = await prisma.keySourceConflict.findMany({ where: { idempotentKey: key } });
    if (conflicts.some((conflict) => conflict.clearedAt === null)) return undefined;
    const cleared = conflicts
      .filter((conflict) => conflict.clearedAt !== null)
      .sort((a, b) => (b.clearedAt?.getTime() ?? 0) - (a.clearedAt?.getTime() ?? 0))[0];
    return {
      decision: 'clear-conflict',
      decidedBy: cleared?.clearedBy ?? undefined,
      decidedAt: (cleared?.clearedAt ?? new Date()).toISOString(),
    };
  }
  const record = await prisma.idempotencyRecord.findUnique({ where: { idempotentKey: key } });
  if (record && record.status === episode.waitingIn && record.updatedAt.toISOString() === episode.waitingSince) {
    return undefined;
  }
  const decided = await prisma.compensationRecord.findFirst({
    where: { idempotentKey: key, decidedAt: { gte: new Date(episode.waitingSince) }, decision: { not: null } },
    orderBy: { decidedAt: 'asc' },
  });
  if (decided?.decision && decided.decidedAt) {
    return {
      decision: decided.decision,
      decidedBy: decided.decidedBy ?? undefined,
      decidedAt: decided.decidedAt.toISOString(),
    };
  }
  return { decision: `now ${record?.status ?? 'purged'}`, decidedAt: (record?.updatedAt ?? new Date()).toISOString() };
}

/**
 * How long a click that came second waits for the first decision's record: a decision another
 * door took a moment before is refused to this one before its record is written.
 */
const OUTCOME_WAIT_MS = 5_000;
/** How long before the vendor's deadline a click's answer is due, for its way back. */
const ANSWER_MARGIN_MS = 250;

/** The episode's outcome once it is recorded, looked for every 200 ms for up to `waitMs`. */
async function outcomeWithin(
  prisma: PrismaClient,
  clicked: Parameters<typeof episodeOutcome>[1],
  waitMs: number,
): Promise<CardOutcome | undefined> {
  const deadline = Date.now() + waitMs;
  for (;;) {
    const outcome = await episodeOutcome(prisma, clicked);
    if (outcome || Date.now() + 200 > deadline) return outcome;
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

/** Takes `decision` for the key through the function the CLI and the MCP tools call for it. */
async function take(deps: OperatorDeps, key: string, decision: string, decidedBy: string): Promise<void> {
  const request = { idempotencyKey: key, decidedBy };
  switch (decision) {
    case 'resubmit':
      await resubmit(deps, request);
      return;
    case 'abandon':
      await decideCompensation(deps.temporal, { ...request, decision: decision });
      return;
    case 'redeliver':
    case 'mark-handled':
      await decideDelivery(deps, { ...request, decision: decision });
      return;
    case 'recompensate':
      await recompensate(deps, request);
      return;
    case 'clear-conflict':
      if ((await clearKeySourceConflicts(deps.prisma, { idempotencyKey: key, clearedBy: decidedBy })) === 0) {
        throw new NoPendingDecisionError(key, 'no key source conflict of it is open');
      }
      return;
    default:
      throw new NoPendingDecisionError(key, `a card offers no decision ${JSON.stringify(decision)}`);
  }
}

/**
 * Takes a card click as a decision, once: a person on `operators` (the vendor's list), on the
 * episode the key still waits in, with a decision the card offered for it. See the file's header.
 */
export async function decideFromCard(
  deps: OperatorDeps & { operators: ReadonlySet<string> },
  click: CardClick,
  /** Until when (epoch ms) a click that came second may wait for the first decision's record. */
  outcomeBy: number = Date.now() + OUTCOME_WAIT_MS,
): Promise<CardAnswer> {
  if (!deps.operators.has(click.userId)) return { kind: 'not an operator' };
  const episode = episodeParts(click.episode);
  if (!episode) return { kind: 'not offered', reason: 'the card names no waiting episode' };
  const clicked = { idempotencyKey: click.idempotencyKey, ...episode };
  const waitingNow = await currentEpisodes(deps.prisma, click.idempotencyKey);
  const sameEpisode = waitingNow.some(
    (now) => now.waitingIn === episode.waitingIn && now.waitingSince === episode.waitingSince,
  );
  if (!sameEpisode) {
    const outcome = await episodeOutcome(deps.prisma, clicked);
    if (outcome) return { kind: 'already decided', outcome };
  }
  const offered = cardDecisionsFor(NEXT_ACTIONS[episode.waitingIn as AwaitingStatus] ?? []).some(
    (button) => button.decision === click.decision,
  );
  if (!offered) return { kind: 'not offered', reason: `${click.decision} is not a decision for ${episode.waitingIn}` };
  const decidedBy = decidedThrough('card', `${click.vendor}:${click.userId}`);
  try {
    await take(deps, click.idempotencyKey, click.decision, decidedBy);
  } catch (error) {
    if (!(error instanceof NoPendingDecisionError)) throw error;
    // Someone decided first, through this card, another, the CLI or MCP: that decision stands. It
    // may still be being carried out, its record not written yet: looked for a few times.
    const outcome = await outcomeWithin(deps.prisma, clicked, Math.min(OUTCOME_WAIT_MS, outcomeBy - Date.now()));
    if (outcome) return { kind: 'already decided', outcome };
    return { kind: 'not offered', reason: error.reason };
  }
  return {
    kind: 'decided',
    outcome: (await episodeOutcome(deps.prisma, clicked)) ?? {
      decision: click.decision,
      decidedBy,
      decidedAt: new Date().toISOString(),
    },
  };
}

/** How each answer is counted (orders_card_clicks_total's `result`). */
const CLICK_RESULTS: Record<CardAnswer['kind'], CardClickResult> = {
  decided: 'decided',
  'already decided': 'already_decided',
  'not an operator': 'not_operator',
  'not offered': 'refused',
};

/** What the clicker reads of an outcome: the decision, who took it, and when. */
const told = outcomeLine;

/**
 * A click answered inside the vendor's deadline (`answerBy`, epoch ms): what became of it, the card
 * locked so that nobody clicks it again; or — the decision still being carried out then — that it
 * is under way, the card left for its workflow to redraw once the key moves on. The decision goes
 * on after the answer; `keep` holds it until it settles (the process's drain), and its failure is
 * the vendor door's to log.
 */
export async function answerCardClick(
  deps: OperatorDeps & { operators: ReadonlySet<string> },
  click: CardClick,
  options: {
    answerBy: number;
    keep: (work: Promise<unknown>) => void;
    /** Told what became of the click once the decision settles, after the answer if need be. */
    counted?: (result: CardClickResult) => void;
  },
): Promise<CardClickReply> {
  // A refusal is answered before the deadline, with a moment to spare for the answer's way back.
  const deciding = decideFromCard(deps, click, options.answerBy - ANSWER_MARGIN_MS);
  options.keep(deciding);
  const count = (result: CardClickResult) => {
    try {
      options.counted?.(result);
    } catch {
      // counting is never a reason for a click to fail
    }
  };
  deciding.then(
    (answer) => count(CLICK_RESULTS[answer.kind]),
    () => count('refused'),
  );
  const answer = await raceDeadline(deciding, options.answerBy, { resolve: undefined });
  if (answer === undefined) {
    // Not yet known whether this click's decision or another door's is taken, or none: said
    // neutrally, and the card left as it is. Its workflow redraws it once the key moves on.
    return { tone: 'info', text: `Deciding: the card shows the outcome once it is taken` };
  }
  if (answer.kind === 'not an operator') {
    return { tone: 'error', text: 'Only the operators named for these cards can decide from them' };
  }
  if (answer.kind === 'not offered') return { tone: 'error', text: answer.reason };
  return {
    tone: answer.kind === 'decided' ? 'success' : 'info',
    text: `${answer.kind === 'decided' ? 'Done' : 'Already decided'}: ${told(answer.outcome)}`,
    lockedAs: told(answer.outcome),
    outcome: answer.outcome,
  };
}

/** What a vendor's door holds that a click needs: the process's clients, settings, metrics and drain. */
export interface CardClickDoorDeps {
  config: Pick<ApprovalEventConfig, 'temporal' | 'writePolicy'>;
  prisma: PrismaClient;
  temporal: OperatorDeps['temporal'];
  metrics: Pick<ProductMetrics, 'cardClicked'>;
  approvalsInFlight: ApprovalEventsInFlight;
  log: { info(fields: object, message: string): void; error(fields: object, message: string): void };
}

/**
 * A click taken at a vendor's door — its callback or its held connection — by the people on
 * `operators`, answered by `answerBy` (epoch ms): counted once its decision settles, that decision
 * held for the process's drain, and its failure logged; the answer logged whichever door it leaves by.
 */
export function takeCardClick(
  deps: CardClickDoorDeps,
  click: CardClick & { eventId: string },
  operators: ReadonlySet<string>,
  answerBy: number,
): Promise<CardClickReply> {
  const answering = answerCardClick(
    {
      prisma: deps.prisma,
      temporal: deps.temporal,
      taskQueue: deps.config.temporal.taskQueue,
      writePolicy: deps.config.writePolicy,
      operators,
    },
    click,
    {
      answerBy,
      counted: (result) => deps.metrics.cardClicked(click.vendor, result),
      keep: (work) =>
        deps.approvalsInFlight.keep(
          work.then(
            () => undefined,
            (error: unknown) =>
              deps.log.error(
                { vendor: click.vendor, eventId: click.eventId, err: error },
                'OA card click not carried out',
              ),
          ),
        ),
    },
  );
  return answering.then((answer) => {
    const { vendor, eventId, idempotencyKey, decision } = click;
    deps.log.info({ vendor, eventId, idempotencyKey, decision, answer: answer.text }, 'OA card click answered');
    return answer;
  });
}

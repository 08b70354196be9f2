// The explorer's commands: deliveries, faults, operators and clocks. Each is a small class whose
// toString reads as one step of a story, so a shrunk sequence says what happened.
import fc from 'fast-check';
import { checkAlways } from './invariants.js';
import { DECISION_WINDOW_MS, runProgram } from './stack.js';
import {
  InvariantViolation,
  keyModel,
  MALFORMED_PRICES,
  type Model,
  type Payload,
  SLOTS,
  slotLabel,
  type World,
} from './world.js';
import { sleep } from '../harness/time.js';

type Command = fc.AsyncCommand<Model, World>;

abstract class Step implements Command {
  abstract readonly kind: string;
  check(model: Readonly<Model>): boolean {
    void model;
    return true;
  }
  async run(model: Model, world: World): Promise<void> {
    world.count(this.kind);
    world.steps.push(this.toString());
    await this.act(model, world);
    await checkAlways(model, world);
  }
  protected abstract act(model: Model, world: World): Promise<void>;
  abstract toString(): string;
}

/**
 * A step aimed at a key chosen when it runs — among `candidates`, by default every key sent before —
 * so operators, redeliveries and clocks meet keys where they matter, not random ones.
 */
abstract class StepOnKnownKey extends Step {
  protected slot: number | undefined;
  constructor(readonly pick: number) {
    super();
  }
  protected candidates(model: Readonly<Model>): number[] {
    return [...model.keys.keys()].sort();
  }
  override check(model: Readonly<Model>) {
    return this.candidates(model).length > 0;
  }
  override async run(model: Model, world: World) {
    const candidates = this.candidates(model);
    this.slot = candidates[this.pick % candidates.length];
    await super.run(model, world);
  }
}

const RIGHT: Payload = { kind: 'right' };
/** How long Temporal's answers are held back when it is slow: below the API's start deadline. */
const SLOW_ANSWER_MS = 2_000;
/** After a lost answer, how long the dead connection lingers before it is cut. */
const LOST_ANSWER_CUT_MS = 1_500;

class Deliver extends Step {
  readonly kind = 'deliver';
  constructor(readonly slot: number) {
    super();
  }
  protected async act(model: Model, world: World) {
    await world.deliver(model, this.slot, RIGHT);
  }
  toString() {
    return `deliver ${slotLabel(this.slot)}`;
  }
}

class DeliverOverMcp extends Step {
  readonly kind = 'deliver over MCP';
  constructor(readonly slot: number) {
    super();
  }
  protected async act(model: Model, world: World) {
    await world.deliverMcp(model, this.slot);
  }
  toString() {
    return `an agent submits ${slotLabel(this.slot)} over MCP (submit_approved_order)`;
  }
}

/** The same approval arrives through the WeCom connector instead of the webhook (MAIN keys only). */
class DeliverThroughConnector extends Step {
  readonly kind = 'deliver through the WeCom connector';
  constructor(readonly slot: number) {
    super();
  }
  override check() {
    return SLOTS[this.slot]?.operation === 'MAIN';
  }
  protected async act(model: Model, world: World) {
    await world.deliverConnector(model, this.slot);
  }
  toString() {
    return `WeCom calls back: ${slotLabel(this.slot)} approved (sys_approval_change)`;
  }
}

/** How each vendor's outbound connection is named in a run's trace, and what it carries. */
const VENDOR_CONNECTIONS = {
  feishu: {
    kind: "deliver over Feishu's long connection",
    says: 'Feishu pushes over its long connection: {slot} approved (approval_instance)',
    lost: ', the connection dropped before its ack reached Feishu',
  },
  dingtalk: {
    kind: "deliver over DingTalk's Stream",
    says: 'DingTalk pushes over its Stream: {slot} agreed (bpms_instance_change)',
    lost: ', its first ack lost with the connection',
  },
} as const;

/** The same approval pushed over a vendor's connection the API holds (MAIN keys only), its first ack lost or not. */
class DeliverOverVendorConnection extends Step {
  readonly kind: string;
  constructor(
    readonly vendor: keyof typeof VENDOR_CONNECTIONS,
    readonly slot: number,
    readonly loseAck: boolean,
  ) {
    super();
    this.kind = VENDOR_CONNECTIONS[vendor].kind;
  }
  override check() {
    return SLOTS[this.slot]?.operation === 'MAIN';
  }
  protected async act(model: Model, world: World) {
    if (this.vendor === 'feishu') await world.deliverLongConnection(model, this.slot, this.loseAck);
    else await world.deliverStream(model, this.slot, this.loseAck);
  }
  toString() {
    const { says, lost } = VENDOR_CONNECTIONS[this.vendor];
    return says.replace('{slot}', slotLabel(this.slot)) + (this.loseAck ? lost : '');
  }
}

/** The OA system redelivers: one of the keys it already sent, chosen when the command runs. */
class Redeliver extends StepOnKnownKey {
  readonly kind = 'redeliver a key sent before';
  protected async act(model: Model, world: World) {
    await world.deliver(model, this.slot as number, RIGHT);
  }
  toString() {
    return `redeliver ${this.slot === undefined ? 'a key sent before' : slotLabel(this.slot)}`;
  }
}

class DeliverConcurrently extends Step {
  readonly kind = 'deliver k copies at once';
  constructor(
    readonly slot: number,
    readonly copies: number,
  ) {
    super();
  }
  protected async act(model: Model, world: World) {
    await Promise.all(Array.from({ length: this.copies }, () => world.deliver(model, this.slot, RIGHT)));
  }
  toString() {
    return `deliver ${slotLabel(this.slot)} ${this.copies} times at once`;
  }
}

/** A different order under a key already answered (chosen among those when the command runs). */
class DeliverConflicting extends StepOnKnownKey {
  readonly kind = 'deliver a conflicting payload';
  constructor(
    pick: number,
    /** The right payload is redelivered at the same moment. */
    readonly alongsideRight: boolean,
  ) {
    super(pick);
  }
  protected override candidates(model: Readonly<Model>): number[] {
    return [...model.keys]
      .filter(([, state]) => state.answered2xx)
      .map(([slot]) => slot)
      .sort();
  }
  protected async act(model: Model, world: World) {
    const slot = this.slot as number;
    await Promise.all([
      world.deliver(model, slot, { kind: 'conflicting' }),
      ...(this.alongsideRight ? [world.deliver(model, slot, RIGHT)] : []),
    ]);
  }
  toString() {
    const key = this.slot === undefined ? 'a key answered before' : slotLabel(this.slot);
    return this.alongsideRight
      ? `deliver a different order under the key of ${key}, and the right one at the same moment`
      : `deliver a different order under the key of ${key}`;
  }
}

class DeliverMalformedPrice extends Step {
  readonly kind = 'deliver a malformed unitPrice';
  constructor(
    readonly slot: number,
    readonly unitPrice: string,
  ) {
    super();
  }
  protected async act(model: Model, world: World) {
    await world.deliver(model, this.slot, { kind: 'malformed-price', unitPrice: this.unitPrice });
  }
  toString() {
    return `deliver ${slotLabel(this.slot)} with unitPrice ${JSON.stringify(this.unitPrice)}`;
  }
}

class DeliverWhileTemporalUnreachable extends Step {
  readonly kind = 'fault: Temporal unreachable during a start';
  constructor(readonly slot: number) {
    super();
  }
  protected async act(model: Model, world: World) {
    world.temporalFault = true;
    await world.stack.temporalProxy.setMode({ kind: 'refuse' });
    try {
      await world.deliver(model, this.slot, RIGHT);
    } finally {
      await world.endTemporalFault();
    }
  }
  toString() {
    return `deliver ${slotLabel(this.slot)} while Temporal is unreachable`;
  }
}

class DeliverAnswerLost extends Step {
  readonly kind = "fault: Temporal's answer to a start lost";
  constructor(readonly slot: number) {
    super();
  }
  protected async act(model: Model, world: World) {
    const lostBefore = world.stack.temporalProxy.lostAnswers();
    world.temporalFault = true;
    await world.stack.temporalProxy.setMode({ kind: 'lose-next-answer', cutAfterMs: LOST_ANSWER_CUT_MS });
    try {
      const answer = await world.deliver(model, this.slot, RIGHT);
      if (world.stack.temporalProxy.lostAnswers() > lostBefore && answer.status !== 202) {
        const state = keyModel(model, this.slot);
        state.startAnswerLost = true;
        // The start may have happened: a key that exceeds stock then goes to compensation.
        if (SLOTS[this.slot]?.kind === 'scarce') state.mayCompensate = true;
      }
    } finally {
      await world.endTemporalFault();
    }
  }
  toString() {
    return `deliver ${slotLabel(this.slot)}; Temporal's answer to the start is lost`;
  }
}

/**
 * Temporal answers slowly: the start happens at once, the delivery hears of it seconds later —
 * and the OA system, hearing nothing yet, redelivers meanwhile.
 */
class DeliverWhileTemporalSlow extends Step {
  readonly kind = 'fault: Temporal answers slowly during a start';
  constructor(
    readonly slot: number,
    readonly redeliverAfterMs: number,
  ) {
    super();
  }
  protected async act(model: Model, world: World) {
    world.temporalFault = true;
    await world.stack.temporalProxy.setMode({ kind: 'delay-replies', ms: SLOW_ANSWER_MS });
    try {
      await Promise.all([
        world.deliver(model, this.slot, RIGHT),
        sleep(this.redeliverAfterMs).then(() => world.deliver(model, this.slot, RIGHT)),
      ]);
    } finally {
      await world.endTemporalFault();
    }
  }
  toString() {
    return `deliver ${slotLabel(this.slot)} while Temporal answers slowly, and again ${this.redeliverAfterMs} ms later`;
  }
}

class DeliverWhileDatabaseUnreachable extends Step {
  readonly kind = 'fault: database unreachable during the write';
  constructor(readonly slot: number) {
    super();
  }
  protected async act(model: Model, world: World) {
    world.stack.pgFaults.reset = 1;
    try {
      const answer = await world.deliver(model, this.slot, RIGHT);
      if (answer.status === 202) {
        keyModel(model, this.slot).mayCompensate = true;
        // Every attempt of the write meets a dead connection; the fault lasts until it gave up.
        const deadline = Date.now() + 20_000;
        while (Date.now() < deadline && (await world.workflowStatus(world.orderWorkflow(this.slot))) === 'RUNNING') {
          if ((await world.statusOf(this.slot)) !== 'RECEIVED') break;
          await sleep(250);
        }
      }
    } finally {
      world.stack.pgFaults.reset = 0;
    }
  }
  toString() {
    return `deliver ${slotLabel(this.slot)} while the database is unreachable for the write`;
  }
}

class DeliverCommitReplyLost extends Step {
  readonly kind = 'fault: COMMIT reply lost';
  constructor(readonly slot: number) {
    super();
  }
  protected async act(model: Model, world: World) {
    const before = world.stack.pgProxy.counts.lostCommitReplies;
    world.stack.pgFaults.lostCommitReply = 1;
    try {
      const answer = await world.deliver(model, this.slot, RIGHT);
      if (answer.status === 202) {
        const deadline = Date.now() + 10_000;
        while (Date.now() < deadline && world.stack.pgProxy.counts.lostCommitReplies === before) await sleep(100);
      }
    } finally {
      world.stack.pgFaults.lostCommitReply = 0;
    }
  }
  toString() {
    return `deliver ${slotLabel(this.slot)}; the write's COMMIT reply is lost`;
  }
}

class KillWorker extends Step {
  readonly kind = 'fault: worker SIGKILL';
  protected async act(_model: Model, world: World) {
    await world.stack.worker.kill('SIGKILL');
    await world.stack.worker.start();
  }
  toString() {
    return 'kill the worker (SIGKILL) and start it again';
  }
}

/**
 * An operator's compensation decision through the real `orders-cli`. Operators decide about keys
 * that show up in compensation, not at random: `pick` chooses among the keys that may be there
 * when the command runs.
 */
class Decide extends StepOnKnownKey {
  readonly kind: string;
  constructor(
    pick: number,
    readonly decision: 'abandon' | 'resubmit',
  ) {
    super(pick);
    this.kind = `operator: ${decision}`;
  }
  protected override candidates(model: Readonly<Model>): number[] {
    return [...model.keys].filter(([, state]) => state.mayCompensate).map(([slot]) => slot);
  }
  protected async act(model: Model, world: World) {
    const slot = this.slot as number;
    // An operator decides once the key shows up as waiting; not later than a few seconds.
    await world.waitForStatus(slot, ['COMPENSATING', 'COMPENSATED', 'FAILED', 'DELIVERED', 'DELIVERY_FAILED'], 15_000);
    const result = await world.cli([this.decision, world.keyOf(slot), '--by', 'explorer']);
    world.trace(
      `orders-cli ${this.decision}: exit ${result.code} ${JSON.stringify(result.data)} ${result.stderr.slice(0, 300)}`,
    );
    if (result.code === 0 && this.decision === 'abandon') {
      const state = keyModel(model, slot);
      if (!state.abandoned) state.runAtAbandon = await world.latestRunId(world.orderWorkflow(slot));
      state.abandoned = true;
    }
    if (result.code === 0 && this.decision === 'resubmit') keyModel(model, slot).endedUnwritten = false;
  }
  toString() {
    return `operator: orders-cli ${this.decision} ${this.slot === undefined ? 'a key in compensation' : slotLabel(this.slot)}`;
  }
}

/**
 * An operator's decision from a Feishu decision card: a click of the card's button for the wait the
 * key is in (or, when it waits for nobody, for the wait it was last in: an old card), pushed over
 * the long connection — alone, or while another operator's opposite `orders-cli` decision goes in
 * at the same moment. One decision per waiting episode: never both told they decided.
 */
class CardDecide extends StepOnKnownKey {
  readonly kind: string;
  constructor(
    pick: number,
    readonly decision: 'abandon' | 'resubmit',
    readonly alongsideCli: boolean,
  ) {
    super(pick);
    this.kind = `operator: card ${decision}${alongsideCli ? ' beside the CLI' : ''}`;
  }
  protected override candidates(model: Readonly<Model>): number[] {
    return [...model.keys].filter(([, state]) => state.mayCompensate).map(([slot]) => slot);
  }
  protected async act(model: Model, world: World) {
    const slot = this.slot as number;
    await world.waitForStatus(slot, ['COMPENSATING', 'COMPENSATED', 'FAILED', 'DELIVERED', 'DELIVERY_FAILED'], 15_000);
    const wait = await world.waitOf(slot);
    if (!wait) return;
    const other = this.decision === 'abandon' ? 'resubmit' : 'abandon';
    const [card, command] = await Promise.all([
      world.clickCard(slot, wait, this.decision),
      this.alongsideCli ? world.cli([other, world.keyOf(slot), '--by', 'explorer']) : undefined,
    ]);
    world.trace(
      `card ${this.decision}: ${card.toast}; ${command ? `orders-cli ${other}: exit ${command.code}` : 'alone'}`,
    );
    // A click answered while its decision was still under way took it if its record says so, soon.
    const cardTook =
      card.toast.startsWith('Done:') || (card.toast.startsWith('Deciding') && (await world.cardDecided(slot, wait)));
    const cliTook = command?.code === 0;
    // The CLI names no wait: arriving after the card's decision and the key's next failure, it
    // decides the next wait, which is no second decision of this one. Each wait is its own record.
    if (cardTook && cliTook && !(await world.decidedInTwoWaits(slot, wait))) {
      throw new InvariantViolation(
        'one decision per waiting episode',
        `${slotLabel(slot)}: the card's ${this.decision} and the CLI's ${other} were both taken (${card.toast})`,
      );
    }
    if (cardTook) await noteDecision(model, world, slot, this.decision);
    if (cliTook) await noteDecision(model, world, slot, other);
  }
  toString() {
    const key = this.slot === undefined ? 'a key in compensation' : slotLabel(this.slot);
    return `operator: a Feishu card's ${this.decision} clicked for ${key}${this.alongsideCli ? ", and another operator's orders-cli at the same moment" : ''}`;
  }
}

/** What a decision taken means for the model: an abandoned key stays so; a resubmitted one is open again. */
async function noteDecision(model: Model, world: World, slot: number, decision: 'abandon' | 'resubmit') {
  const state = keyModel(model, slot);
  if (decision === 'abandon') {
    if (!state.abandoned) state.runAtAbandon = await world.latestRunId(world.orderWorkflow(slot));
    state.abandoned = true;
  } else {
    state.endedUnwritten = false;
  }
}

/** The receipts' scan runs (its schedule's minute, brought forward): each written approval's receipt is posted once. */
class ReceiptScan extends Step {
  readonly kind: string;
  /** `answerLost`: Feishu creates the first receipt comment the scan posts, and its answer is lost. */
  constructor(readonly answerLost: boolean) {
    super();
    this.kind = answerLost ? "fault: a receipt's answer lost" : "clock: the receipts' scan runs";
  }
  override check(model: Readonly<Model>) {
    return model.keys.size > 0;
  }
  protected async act(_model: Model, world: World) {
    await (this.answerLost ? world.scanReceiptsAnswerLost() : world.scanReceipts());
  }
  toString() {
    return this.answerLost
      ? "clock: the receipts' scan runs; Feishu creates the first receipt comment, and its answer is lost"
      : "clock: the receipts' scan runs, each new order's receipt posted to its approval";
  }
}

class Recompensate extends Step {
  readonly kind = 'operator: recompensate';
  constructor(readonly slot: number) {
    super();
  }
  override check(model: Readonly<Model>) {
    return model.keys.has(this.slot);
  }
  protected async act(model: Model, world: World) {
    const result = await world.cli(['recompensate', world.keyOf(this.slot), '--by', 'explorer']);
    if (result.code === 0) keyModel(model, this.slot).endedUnwritten = false;
  }
  toString() {
    return `operator: orders-cli recompensate ${slotLabel(this.slot)}`;
  }
}

/** `redeliver` / `mark-handled`: used only when this version of the CLI has them. */
class DeliveryDecision extends Step {
  readonly kind: string;
  constructor(
    readonly slot: number,
    readonly decision: 'redeliver' | 'mark-handled',
  ) {
    super();
    this.kind = `operator: ${decision}`;
  }
  override check(model: Readonly<Model>) {
    return model.keys.has(this.slot);
  }
  protected async act(_model: Model, world: World) {
    if (!world.cliCommands.has(this.decision)) return;
    await world.waitForStatus(this.slot, ['DELIVERY_FAILED', 'DELIVERED'], 10_000);
    await world.cli([this.decision, world.keyOf(this.slot), '--by', 'explorer']);
  }
  toString() {
    return `operator: orders-cli ${this.decision} ${slotLabel(this.slot)}`;
  }
}

class PurgeExpired extends Step {
  readonly kind = 'clock: retention purge';
  override check(model: Readonly<Model>) {
    return model.keys.size > 0;
  }
  protected async act(model: Model, world: World) {
    // The run's settled records age past the retention window at once — only those whose workflow
    // has ended: no record is 30 days old while its run still delivers.
    for (const slot of model.keys.keys()) {
      const status = await world.statusOf(slot);
      if (status !== 'SUBMITTED' && status !== 'DELIVERED') continue;
      if ((await world.workflowStatus(world.orderWorkflow(slot))) === 'RUNNING') continue;
      const aged = new Date(Date.now() - 400 * 24 * 3600_000);
      await world.stack.orders.idempotencyRecord.updateMany({
        where: { idempotentKey: world.keyOf(slot) },
        data: { createdAt: aged, updatedAt: aged },
      });
    }
    await world.cli(['purge-expired']);
    for (const slot of model.keys.keys()) {
      if ((await world.statusOf(slot)) === undefined) keyModel(model, slot).purged = true;
    }
  }
  toString() {
    return 'clock: settled records pass the retention window; orders-cli purge-expired';
  }
}

/** Temporal's retention deletes the closed runs of a key sent before (chosen when the command runs). */
class DeleteHistory extends StepOnKnownKey {
  readonly kind = "clock: a closed run's history deleted";
  protected async act(_model: Model, world: World) {
    const slot = this.slot as number;
    for (const workflowId of [world.orderWorkflow(slot), world.compensationWorkflow(slot)]) {
      const status = await world.workflowStatus(workflowId);
      if (status === undefined || status === 'RUNNING') continue;
      await runProgram(
        world.stack.temporalBin,
        ['workflow', 'delete', '--workflow-id', workflowId, '--address', world.stack.temporalAddress],
        process.env,
      );
      const deadline = Date.now() + 15_000;
      while (Date.now() < deadline && (await world.workflowStatus(workflowId)) !== undefined) await sleep(250);
    }
  }
  toString() {
    const key = this.slot === undefined ? 'a key sent before' : slotLabel(this.slot);
    return `clock: the closed runs of ${key} leave Temporal's retention (history deleted)`;
  }
}

class DecisionWindowPasses extends Step {
  readonly kind = 'clock: decision windows run out';
  override check(model: Readonly<Model>) {
    return model.keys.size > 0;
  }
  protected async act() {
    await sleep(DECISION_WINDOW_MS + 2_000);
  }
  toString() {
    return `clock: ${Math.round(DECISION_WINDOW_MS / 1000) + 2} s pass; every decision window runs out`;
  }
}

const slot = fc.integer({ min: 0, max: SLOTS.length - 1 });
const overConnection = (vendor: keyof typeof VENDOR_CONNECTIONS) =>
  fc.tuple(slot, fc.boolean()).map(([s, loseAck]) => new DeliverOverVendorConnection(vendor, s, loseAck));

/** Every command kind, by the name `--without` takes, with its weight. */
export const COMMAND_KINDS: Record<string, { weight: number; arbitrary: fc.Arbitrary<Command> }> = {
  deliver: { weight: 3, arbitrary: slot.map((s) => new Deliver(s)) },
  redeliver: { weight: 2, arbitrary: slot.map((s) => new Redeliver(s)) },
  mcp: { weight: 1, arbitrary: slot.map((s) => new DeliverOverMcp(s)) },
  connector: { weight: 2, arbitrary: slot.map((s) => new DeliverThroughConnector(s)) },
  'long-connection': { weight: 2, arbitrary: overConnection('feishu') },
  stream: { weight: 2, arbitrary: overConnection('dingtalk') },
  concurrent: {
    weight: 2,
    arbitrary: fc.tuple(slot, fc.integer({ min: 2, max: 6 })).map(([s, k]) => new DeliverConcurrently(s, k)),
  },
  conflict: {
    weight: 1,
    arbitrary: fc.tuple(slot, fc.boolean()).map(([s, alongside]) => new DeliverConflicting(s, alongside)),
  },
  'malformed-price': {
    weight: 1,
    arbitrary: fc.tuple(slot, fc.constantFrom(...MALFORMED_PRICES)).map(([s, p]) => new DeliverMalformedPrice(s, p)),
  },
  'temporal-down': { weight: 1, arbitrary: slot.map((s) => new DeliverWhileTemporalUnreachable(s)) },
  'answer-lost': { weight: 1, arbitrary: slot.map((s) => new DeliverAnswerLost(s)) },
  'temporal-slow': {
    weight: 1,
    arbitrary: fc
      .tuple(slot, fc.constantFrom(200, 600, 1200))
      .map(([s, after]) => new DeliverWhileTemporalSlow(s, after)),
  },
  'db-down': { weight: 1, arbitrary: slot.map((s) => new DeliverWhileDatabaseUnreachable(s)) },
  'commit-lost': { weight: 1, arbitrary: slot.map((s) => new DeliverCommitReplyLost(s)) },
  'worker-kill': { weight: 1, arbitrary: fc.constant(new KillWorker()) },
  abandon: { weight: 2, arbitrary: slot.map((s) => new Decide(s, 'abandon')) },
  'card-click': {
    weight: 2,
    arbitrary: fc
      .tuple(slot, fc.constantFrom('abandon' as const, 'resubmit' as const), fc.boolean())
      .map(([s, decision, alongside]) => new CardDecide(s, decision, alongside)),
  },
  receipts: { weight: 1, arbitrary: fc.constant(new ReceiptScan(false)) },
  'receipt-answer-lost': { weight: 1, arbitrary: fc.constant(new ReceiptScan(true)) },
  resubmit: { weight: 1, arbitrary: slot.map((s) => new Decide(s, 'resubmit')) },
  recompensate: { weight: 1, arbitrary: slot.map((s) => new Recompensate(s)) },
  'operator-redeliver': { weight: 1, arbitrary: slot.map((s) => new DeliveryDecision(s, 'redeliver')) },
  'mark-handled': { weight: 1, arbitrary: slot.map((s) => new DeliveryDecision(s, 'mark-handled')) },
  purge: { weight: 1, arbitrary: fc.constant(new PurgeExpired()) },
  'delete-history': { weight: 1, arbitrary: slot.map((s) => new DeleteHistory(s)) },
  'window-passes': { weight: 1, arbitrary: fc.constant(new DecisionWindowPasses()) },
};

export function commandArbitraries(without: ReadonlySet<string>, cliCommands: ReadonlySet<string>) {
  return Object.entries(COMMAND_KINDS)
    .filter(([name]) => !without.has(name))
    .filter(([name]) =>
      name === 'operator-redeliver' || name === 'mark-handled' ? cliCommands.has(name.replace('operator-', '')) : true,
    )
    .flatMap(([, { weight, arbitrary }]) => Array.from({ length: weight }, () => arbitrary));
}

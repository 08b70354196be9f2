// The start path's own terms, shared by its doors (./submit-approval.ts) and the path itself
// (./take-delivery.ts): what a door hands in, what a delivery is taken with, what it claims, what
// each phase hands on, and what it answers.
import type { Client } from '@temporalio/client';
import type { OrderNamingDoor } from '../domain/door.js';
import type { OaVendor } from '../domain/oa-approval.js';
import type { Approval } from '../domain/order-input.js';
import type { OrderStatus } from '../domain/order-status.js';
import type { IdempotencyRecord, NewRecord } from '../services/db/idempotency-records.js';
import type { ProductMetrics } from '../services/metrics/product-metrics.js';
import type { PrismaClient } from '../services/db/prisma-client.js';
import type { OrderWorkflowStart } from '../workflows/definitions.js';
import type { ClaimStore } from './claim-store.js';
import type { IntakeLoad } from './intake-load.js';
import type { IntakePlace } from './load-shedding.js';
import type { WritePolicy } from './settings.js';

export interface SubmissionDeps {
  prisma: PrismaClient;
  /** What the start path reads and writes about a key: the database's, or a test's in memory. */
  claims: ClaimStore;
  temporal: Client;
  taskQueue: string;
  writePolicy: WritePolicy;
  /** The deadline for the Temporal start call: the caller's answer must come well inside its own timeout. */
  startTimeoutMs: number;
  /** Where a delivery refused as another door's is counted; none: not counted (it is still recorded). */
  metrics?: Pick<ProductMetrics, 'keySourceConflict'> | undefined;
}

/**
 * Which deliveries may start their key's workflow. Passed in, like every dependency, so a test can
 * run the service with a guard broken on purpose and show that its checks notice.
 */
export interface StartGuard {
  /** Whether a delivery of the key `record` holds may start (or attach to) its workflow. */
  mayStart: (record: IdempotencyRecord) => boolean;
  /** What a start does when a closed run holds the key's workflow id. */
  reusePolicy: 'ALLOW_DUPLICATE' | 'REJECT_DUPLICATE';
}

/** One approval that names its order, as its door hands it in (`submitApproval`). */
export interface ApprovalDelivery {
  deps: SubmissionDeps;
  approval: Approval;
  /** The door it came through: the key belongs to the first door that claimed it (decision 38). */
  door: OrderNamingDoor;
  /** Default: every option's default. */
  options?: DeliveryOptions | undefined;
}

/** One approved OA instance, which names only its form, as its connector hands it in (`submitApprovalForm`). */
export interface FormDelivery {
  deps: SubmissionDeps;
  form: { vendor: OaVendor; instanceId: string };
  /** Default: every option's default. */
  options?: DeliveryOptions | undefined;
}

/**
 * One delivery as the start path takes it (`takeDelivery`): the workflow input it starts, what it
 * claims the key with, how it is taken, and its place in the process's intake.
 */
export interface Delivery {
  deps: SubmissionDeps;
  input: OrderWorkflowStart;
  claim: DeliveryClaim;
  options: TakingOptions;
  place: IntakePlace;
}

/** What the start path takes a delivery with: every option but the intake, which is the wrapper's. */
export type TakingOptions = Omit<SettledDeliveryOptions, 'intake'>;

/**
 * What each phase of the start path hands on: the delivery goes on to the next phase with `value`,
 * or it is answered with `submission` and no later phase runs. A refusal (a conflict, Temporal
 * unavailable, a shed delivery) is neither: it is thrown.
 */
export type Phase<T> = { kind: 'go-on'; value: T } | { kind: 'answer'; submission: Submission };

/** What a door claims the key with: the order it names (none for an OA form), and the door itself. */
export type DeliveryClaim = Pick<NewRecord, 'fingerprint' | 'request' | 'source'>;

export interface Submission {
  idempotencyKey: string;
  workflowId: string;
  /** False for exactly one delivery of a key: the first one answered with success. */
  duplicate: boolean;
  status: OrderStatus;
  /** The written order's number; only when the delivery asked to wait and the order is written. */
  orderNo?: string;
}

/**
 * How a delivery is taken: every knob of the start path, in one object. Each may be left out; what
 * a caller that leaves it out gets is its default, filled in one place (`withDefaults`, ./submit-approval.ts).
 */
export interface DeliveryOptions {
  /**
   * Epoch milliseconds: wait until then for the write's outcome, so the answer can carry the order
   * number. The start itself is confirmed as always, under its own deadline.
   * Default: none — the answer comes once the start is confirmed.
   */
  waitUntil?: number | undefined;
  /**
   * Called with the key once it is claimed: from then on a slow start may finish without its caller.
   * Default: nothing is called.
   */
  onClaimed?: ((idempotencyKey: string) => void) | undefined;
  /**
   * The caller's deadline, counted from the request's arrival. Default: none — the start's own
   * deadline (WEBHOOK_START_TIMEOUT_MS) bounds the start, and nothing is shed for want of time.
   */
  deadline?: DeliveryDeadline | undefined;
  /**
   * The order worker runs in this process on the client's connection (API_HOSTS_WORKER): starts
   * ask for eager start, and the start is raced against its deadline. Default: false.
   */
  workerInProcess?: boolean | undefined;
  /** Which deliveries may start their key's workflow. Default: `oneStartPerKey`; a test passes another. */
  startGuard?: StartGuard | undefined;
  /**
   * This process's intake, shared by its doors: how many deliveries it takes at once, and what a
   * shed one hears (./load-shedding.ts). Default: none — no cap, and a delivery shed for want of
   * time is told to come back after RETRY_AFTER_WITHOUT_A_RATE_SECONDS.
   */
  intake?: IntakeLoad | undefined;
}

/**
 * When a delivery's caller must have its answer, counted from the moment its request arrived, so
 * that the time it waited in this process counts (docs/architecture.md, decision 34). A delivery
 * with too little of it left is shed before it claims anything. The webhook's answer says the start
 * happened: a claim or a start still running at `answerBy` is answered as shed and goes on, kept
 * (decision 11). An OA connector's reply needs the claim only (`goesOnAfterAnswer`): its caller
 * races the whole delivery against the reply itself, and whatever runs past it goes on to the start.
 */
export interface DeliveryDeadline {
  /** Epoch milliseconds, as `answerBy`. */
  arrivedAt: number;
  answerBy: number;
  /** Default: false — the claim and the start are cut to `answerBy`. */
  goesOnAfterAnswer?: boolean | undefined;
}

/** `DeliveryOptions` with every default filled in. */
export interface SettledDeliveryOptions {
  waitUntil: number | undefined;
  onClaimed: (idempotencyKey: string) => void;
  deadline: Required<DeliveryDeadline> | undefined;
  workerInProcess: boolean;
  startGuard: StartGuard;
  intake: IntakeLoad | undefined;
}

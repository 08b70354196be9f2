// All I/O of the workflows, composed from one module per concern: the order write, the compensation
// steps, the delivery, the safety nets, the decision cards, the approval receipts. Built from explicit dependencies so the worker, the tests
// and the fault harness wire the same code to different databases and clients. The names of the
// returned functions are the activity names recorded in workflow histories: they never change.
import type { Client } from '@temporalio/client';
import type { DownstreamConfig } from './settings.js';
import type { OrderEventPublisher } from '../services/broker/order-event-publisher.js';
import type { PrismaClient } from '../services/db/prisma-client.js';
import { noProductMetrics, type ProductMetrics } from '../services/metrics/product-metrics.js';
import type { FormMappingFile } from '../domain/form-mapping.js';
import type { OaVendor } from '../domain/oa-approval.js';
import type { ApprovalReader } from '../vendors/approval-reader.js';
import type { ApprovalReceiptPoster } from '../vendors/approval-receipts.js';
import type { DecisionCardSender } from '../vendors/decision-cards.js';
import { createApprovalReceiptActivities } from './approval-receipts.js';
import { createApprovalFormActivities } from './approval-form.js';
import { createCompensationActivities } from './compensation.js';
import { createDecisionCardActivities } from './decision-cards.js';
import { createDeliveryActivities, deliveryTargetsOf } from './delivery.js';
import { createOrderWriteActivities } from './order-write.js';
import { createSafetyNetActivities } from './safety-nets.js';

export interface ActivityDeps {
  prisma: PrismaClient;
  temporal: Client;
  taskQueue: string;
  /** Where order events go over HTTP; with no publisher either, the delivery step is skipped. */
  downstream?: DownstreamConfig | undefined;
  /** Publishes order events to the broker; undefined: no broker target. */
  publisher?: OrderEventPublisher | undefined;
  metrics?: ProductMetrics;
  /** The OA approval readers, one per connector that is on (none: no connector order can be read). */
  readers?: Partial<Record<OaVendor, ApprovalReader>>;
  /** OA_FORM_MAPPING, read at start; undefined when no connector is on. */
  formMapping?: FormMappingFile | undefined;
  /** The vendors whose chat gets decision cards, each with its sender (none: no cards). */
  decisionCardSenders?: ReadonlyMap<OaVendor, DecisionCardSender> | undefined;
  /** DECISION_CARD_LOOK_EVERY_MS; default the card workflow's minute. */
  decisionCardLookEveryMs?: number | undefined;
  /** TEMPORAL_UI_URL and the namespace: where a card links its key's workflow; undefined: no link. */
  decisionCardTemporalUi?: { url: string; namespace: string } | undefined;
  /** The vendors whose approvals get their order's receipt, each with its poster (none: no receipts). */
  receiptPosters?: ReadonlyMap<OaVendor, ApprovalReceiptPoster> | undefined;
}

export function createActivities(deps: ActivityDeps) {
  const { prisma } = deps;
  const metrics = deps.metrics ?? noProductMetrics();
  const { writeOrder } = createOrderWriteActivities({
    prisma,
    metrics,
    deliveryTargets: deliveryTargetsOf(deps),
  });
  const { deliverOrderEvent, recordDeliveryOutcome } = createDeliveryActivities({
    prisma,
    downstream: deps.downstream,
    publisher: deps.publisher,
    metrics,
  });
  const { scanForDuplicateOrders, purgeExpiredIdempotencyRecords } = createSafetyNetActivities({ prisma, metrics });
  const {
    startCompensation,
    reconcileFailedWrite,
    orderLandedSince,
    recordDecision,
    resubmitOrder,
    markCompensationFailed,
  } = createCompensationActivities({ prisma, temporal: deps.temporal, taskQueue: deps.taskQueue, metrics });

  const { readApprovalForm } = createApprovalFormActivities({
    prisma,
    readers: deps.readers ?? {},
    formMapping: deps.formMapping,
  });

  const { startDecisionCards, sendDecisionCard, decisionCardState, refreshDecisionCard } = createDecisionCardActivities(
    {
      prisma,
      temporal: deps.temporal,
      taskQueue: deps.taskQueue,
      senders: deps.decisionCardSenders ?? new Map(),
      lookEveryMs: deps.decisionCardLookEveryMs,
      temporalUi: deps.decisionCardTemporalUi,
      metrics,
    },
  );

  const { startApprovalReceipts, postApprovalReceipt, recordApprovalReceiptFailure } = createApprovalReceiptActivities({
    prisma,
    temporal: deps.temporal,
    taskQueue: deps.taskQueue,
    posters: deps.receiptPosters ?? new Map(),
    metrics,
  });

  // Listed by name, so a renamed function fails to compile here instead of breaking replay.
  return {
    writeOrder,
    deliverOrderEvent,
    scanForDuplicateOrders,
    purgeExpiredIdempotencyRecords,
    recordDeliveryOutcome,
    startCompensation,
    reconcileFailedWrite,
    orderLandedSince,
    recordDecision,
    resubmitOrder,
    markCompensationFailed,
    readApprovalForm,
    startDecisionCards,
    sendDecisionCard,
    decisionCardState,
    refreshDecisionCard,
    startApprovalReceipts,
    postApprovalReceipt,
    recordApprovalReceiptFailure,
  };
}

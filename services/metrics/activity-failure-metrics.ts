// Counts every failed activity attempt by activity and error class — the retries of the write and
// of the delivery, and what failed for good — in one place, whatever the activity.
import { Context } from '@temporalio/activity';
import { ApplicationFailure } from '@temporalio/common';
import type { ActivityInboundCallsInterceptor, ActivityExecuteInput, Next } from '@temporalio/worker';
import { classifyError } from '../../domain/error-classification.js';
import type { ProductMetrics } from './product-metrics.js';

export class ActivityFailureMetrics implements ActivityInboundCallsInterceptor {
  constructor(private readonly metrics: ProductMetrics) {}

  async execute(input: ActivityExecuteInput, next: Next<ActivityInboundCallsInterceptor, 'execute'>): Promise<unknown> {
    try {
      return await next(input);
    } catch (error) {
      const activity = Context.current().info.activityType;
      if (error instanceof ApplicationFailure) {
        this.metrics.activityFailed(activity, error.type ?? 'Unclassified', !error.nonRetryable);
      } else {
        // Compensation steps throw errors as they are: their retry policy retries any failure.
        this.metrics.activityFailed(activity, classifyError(error).errorClass, true);
      }
      throw error;
    }
  }
}

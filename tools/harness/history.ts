// What a run's event history says happened, step by step: every attempt of an activity task, every
// outcome a local activity recorded (its marker), the timers, and the workflow tasks that were
// lost (timed out or failed). A local activity leaves no event per attempt — only a marker with
// the attempt it ended on — so tests and the chaos harness read both kinds through here.
import type { temporal } from '@temporalio/proto';
import { optionalTsToMs } from '@temporalio/common/lib/time.js';

type History = temporal.api.history.v1.IHistory;

/** The name the SDK's core gives a local activity's marker. */
const LOCAL_ACTIVITY_MARKER = 'core_local_activity';

export type HistoryStep =
  /** An activity task's attempt was picked up by a worker (ActivityTaskStarted). */
  | { kind: 'activity-attempt'; activityType: string; attempt: number }
  /**
   * A local activity recorded its outcome: the attempt it ended on, whether that attempt failed,
   * the backoff it asked for when its next attempt waits for a timer, and what it returned.
   */
  | {
      kind: 'local-activity';
      activityType: string;
      attempt: number;
      failed: boolean;
      backoffMs?: number;
      result?: unknown;
    }
  | { kind: 'timer-started'; timerId: string; durationMs: number }
  | { kind: 'timer-fired'; timerId: string }
  /** A workflow task that never completed: its worker died or its task failed. */
  | { kind: 'workflow-task-lost'; how: 'timed out' | 'failed' };

export function historySteps(history: History): HistoryStep[] {
  const typeOfScheduled = new Map<string, string>();
  const steps: HistoryStep[] = [];
  for (const event of history.events ?? []) {
    const scheduled = event.activityTaskScheduledEventAttributes;
    if (scheduled) typeOfScheduled.set(String(event.eventId), scheduled.activityType?.name ?? '?');
    const started = event.activityTaskStartedEventAttributes;
    if (started) {
      const activityType = typeOfScheduled.get(String(started.scheduledEventId)) ?? '?';
      steps.push({ kind: 'activity-attempt', activityType, attempt: started.attempt ?? 1 });
    }
    const marker = event.markerRecordedEventAttributes;
    if (marker?.markerName === LOCAL_ACTIVITY_MARKER) steps.push(localActivityStep(marker));
    const timer = event.timerStartedEventAttributes;
    if (timer) {
      steps.push({
        kind: 'timer-started',
        timerId: timer.timerId ?? '',
        durationMs: optionalTsToMs(timer.startToFireTimeout) ?? 0,
      });
    }
    const fired = event.timerFiredEventAttributes;
    if (fired) steps.push({ kind: 'timer-fired', timerId: fired.timerId ?? '' });
    if (event.workflowTaskTimedOutEventAttributes) steps.push({ kind: 'workflow-task-lost', how: 'timed out' });
    if (event.workflowTaskFailedEventAttributes) steps.push({ kind: 'workflow-task-lost', how: 'failed' });
  }
  return steps;
}

/** The attempt numbers each activity type ran, counted: `{ writeOrder: { 1: 40, 2: 3 } }`. */
export function attemptsByActivityType(steps: HistoryStep[], into: Record<string, Record<number, number>> = {}) {
  for (const step of steps) {
    if (step.kind !== 'activity-attempt' && step.kind !== 'local-activity') continue;
    const histogram = (into[step.activityType] ??= {});
    histogram[step.attempt] = (histogram[step.attempt] ?? 0) + 1;
  }
  return into;
}

/** The marker's JSON `data` (snake_case, as the SDK's core writes it). */
interface LocalActivityMarkerData {
  attempt?: number;
  activity_type?: string;
  backoff?: { seconds: number; nanos: number } | null;
}

function localActivityStep(marker: temporal.api.history.v1.IMarkerRecordedEventAttributes): HistoryStep {
  const data = (jsonPayload(marker.details?.data?.payloads?.[0]?.data) ?? {}) as LocalActivityMarkerData;
  const result = jsonPayload(marker.details?.result?.payloads?.[0]?.data);
  const backoffMs = data.backoff ? data.backoff.seconds * 1000 + Math.round(data.backoff.nanos / 1e6) : undefined;
  return {
    kind: 'local-activity',
    activityType: data.activity_type ?? '?',
    attempt: data.attempt ?? 1,
    failed: marker.failure !== null && marker.failure !== undefined,
    ...(backoffMs !== undefined ? { backoffMs } : {}),
    ...(result !== undefined ? { result } : {}),
  };
}

/** A payload the default converter wrote as JSON (this project's results are plain JSON). */
function jsonPayload(data: Uint8Array | null | undefined): unknown {
  return data && data.length > 0 ? JSON.parse(Buffer.from(data).toString('utf8')) : undefined;
}

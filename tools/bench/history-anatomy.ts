// What a run's event history holds, counted: its events by type, its encoded size, and the bytes of
// the payloads in it (inputs, results, markers, search attributes, the UI's summary and details),
// by the event field that carries them.
import proto from '@temporalio/proto';

type History = proto.temporal.api.history.v1.IHistory;

const { EventType } = proto.temporal.api.enums.v1;

export interface HistoryAnatomy {
  events: number;
  /** Event type (without its EVENT_TYPE_ prefix) → how many. */
  eventTypes: Map<string, number>;
  /** The history as the server sends it, protobuf-encoded. */
  historyBytes: number;
  payloadBytes: number;
  /** `EVENT_TYPE.attributeField` → payload bytes under it. */
  payloadBytesByField: Map<string, number>;
}

/** A Payload: its data and metadata values are bytes. */
function isPayload(
  value: unknown,
): value is { data?: Uint8Array | null; metadata?: Record<string, Uint8Array> | null } {
  if (typeof value !== 'object' || value === null) return false;
  const { data, metadata } = value as { data?: unknown; metadata?: unknown };
  return data instanceof Uint8Array && (metadata === undefined || metadata === null || typeof metadata === 'object');
}

function payloadBytes(value: unknown): number {
  if (isPayload(value)) {
    const metadata = Object.entries(value.metadata ?? {}).reduce(
      (sum, [name, bytes]) => sum + name.length + bytes.length,
      0,
    );
    return (value.data?.length ?? 0) + metadata;
  }
  if (value instanceof Uint8Array || typeof value !== 'object' || value === null) return 0;
  return Object.values(value).reduce<number>((sum, inner) => sum + payloadBytes(inner), 0);
}

export function historyAnatomy(history: History): HistoryAnatomy {
  const eventTypes = new Map<string, number>();
  const payloadBytesByField = new Map<string, number>();
  let total = 0;
  for (const event of history.events ?? []) {
    const type = (EventType[event.eventType ?? 0] ?? 'UNKNOWN').replace(/^EVENT_TYPE_/, '');
    eventTypes.set(type, (eventTypes.get(type) ?? 0) + 1);
    for (const [field, value] of Object.entries(event)) {
      const bytes = payloadBytes(value);
      if (bytes === 0) continue;
      total += bytes;
      const where = `${type}.${field.replace(/EventAttributes$/, '')}`;
      payloadBytesByField.set(where, (payloadBytesByField.get(where) ?? 0) + bytes);
    }
  }
  return {
    events: history.events?.length ?? 0,
    eventTypes,
    historyBytes: proto.temporal.api.history.v1.History.encode(history).finish().length,
    payloadBytes: total,
    payloadBytesByField,
  };
}

/** Several runs' anatomies added up (divide by the count for a run's). */
export function sumAnatomies(anatomies: HistoryAnatomy[]): HistoryAnatomy {
  const add = (into: Map<string, number>, from: Map<string, number>) => {
    for (const [name, count] of from) into.set(name, (into.get(name) ?? 0) + count);
  };
  const sum: HistoryAnatomy = {
    events: 0,
    eventTypes: new Map(),
    historyBytes: 0,
    payloadBytes: 0,
    payloadBytesByField: new Map(),
  };
  for (const anatomy of anatomies) {
    sum.events += anatomy.events;
    sum.historyBytes += anatomy.historyBytes;
    sum.payloadBytes += anatomy.payloadBytes;
    add(sum.eventTypes, anatomy.eventTypes);
    add(sum.payloadBytesByField, anatomy.payloadBytesByField);
  }
  return sum;
}

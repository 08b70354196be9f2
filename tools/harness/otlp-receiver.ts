// A tiny OTLP/HTTP receiver (JSON encoding, `POST /v1/traces`): what a collector or Jaeger would
// receive from a process whose OTEL_EXPORTER_OTLP_ENDPOINT points here.
import http from 'node:http';
import type { AddressInfo } from 'node:net';

export interface ReceivedSpan {
  serviceName: string | undefined;
  traceId: string;
  spanId: string;
  parentSpanId: string | undefined;
  name: string;
  attributes: Record<string, unknown>;
  /** The span's events (a recorded exception among them), with their attributes. */
  events: { name: string; attributes: Record<string, unknown> }[];
  /** The status message, set when the span failed. */
  statusMessage: string | undefined;
}

interface OtlpValue {
  stringValue?: string;
  intValue?: number | string;
  boolValue?: boolean;
  doubleValue?: number;
}
interface OtlpKeyValue {
  key: string;
  value: OtlpValue;
}
interface OtlpTraces {
  resourceSpans?: {
    resource?: { attributes?: OtlpKeyValue[] };
    scopeSpans?: {
      spans?: {
        traceId: string;
        spanId: string;
        parentSpanId?: string;
        name: string;
        attributes?: OtlpKeyValue[];
        events?: { name: string; attributes?: OtlpKeyValue[] }[];
        status?: { message?: string };
      }[];
    }[];
  }[];
}

export interface OtlpReceiver {
  /** The base URL, as OTEL_EXPORTER_OTLP_ENDPOINT takes it. */
  url: string;
  spans: () => ReceivedSpan[];
  close: () => Promise<void>;
}

function attributesOf(list: OtlpKeyValue[] | undefined): Record<string, unknown> {
  return Object.fromEntries(
    (list ?? []).map(({ key, value }) => [
      key,
      value.stringValue ?? value.intValue ?? value.boolValue ?? value.doubleValue,
    ]),
  );
}

export async function startOtlpReceiver(): Promise<OtlpReceiver> {
  const received: ReceivedSpan[] = [];
  const server = http.createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      if (request.method !== 'POST' || request.url !== '/v1/traces') {
        response.writeHead(404).end();
        return;
      }
      let body: OtlpTraces;
      try {
        body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as OtlpTraces;
      } catch {
        // Not OTLP/JSON (another protocol configured by mistake): the exporter hears so.
        response.writeHead(400).end();
        return;
      }
      for (const resourceSpans of body.resourceSpans ?? []) {
        const serviceName = attributesOf(resourceSpans.resource?.attributes)['service.name'];
        for (const span of (resourceSpans.scopeSpans ?? []).flatMap((scope) => scope.spans ?? [])) {
          received.push({
            serviceName: typeof serviceName === 'string' ? serviceName : undefined,
            traceId: span.traceId,
            spanId: span.spanId,
            parentSpanId: span.parentSpanId || undefined,
            name: span.name,
            attributes: attributesOf(span.attributes),
            events: (span.events ?? []).map((event) => ({
              name: event.name,
              attributes: attributesOf(event.attributes),
            })),
            statusMessage: span.status?.message || undefined,
          });
        }
      }
      response.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    spans: () => [...received],
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

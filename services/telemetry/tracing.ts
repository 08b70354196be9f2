// OpenTelemetry traces: one trace per approval, from the request that brought it through the
// workflow start, the workflow, its activities (the local-activity write included) to the POST and
// the broker publish of `order.created`, every span tagged with the key (docs/architecture.md,
// decision 22); the names and attributes of our own spans are in span-conventions.ts. Off unless
// OTEL_EXPORTER_OTLP_ENDPOINT is set: then nothing here is installed, every helper is one boolean
// check, and no interceptor, span or header is added on the hot path.
import { createRequire } from 'node:module';
import {
  context,
  propagation,
  type Attributes,
  ROOT_CONTEXT,
  type Span,
  SpanKind,
  SpanStatusCode,
  trace,
} from '@opentelemetry/api';
import type * as GrpcExporterPackage from '@opentelemetry/exporter-trace-otlp-grpc';
import type * as JsonExporterPackage from '@opentelemetry/exporter-trace-otlp-http';
import type * as ProtobufExporterPackage from '@opentelemetry/exporter-trace-otlp-proto';
import type * as ResourcesPackage from '@opentelemetry/resources';
import type { Resource } from '@opentelemetry/resources';
import type * as TraceSdkPackage from '@opentelemetry/sdk-trace-node';
import type { NodeTracerProvider, SpanExporter, SpanProcessor } from '@opentelemetry/sdk-trace-node';
import type {
  ClientInterceptors,
  WorkflowClientInterceptor,
  WorkflowSignalInput,
  WorkflowSignalWithStartInput,
  WorkflowStartInput,
  WorkflowStartUpdateInput,
  WorkflowStartUpdateWithStartInput,
} from '@temporalio/client';
import type * as TemporalTracingPackage from '@temporalio/interceptors-opentelemetry';
import type { OpenTelemetrySinks } from '@temporalio/interceptors-opentelemetry';
import type { ActivityInboundCallsInterceptor, InjectedSinks, WorkerOptions } from '@temporalio/worker';
import { idempotencyKeyOfWorkflowId } from '../../domain/idempotency-key.js';
import { redactUrl } from '../../domain-node/redact-url.js';
import type { TracingConfig } from './settings.js';
import { messageOf } from '../../domain/errors.js';
import { classifyError } from '../../domain/error-classification.js';

/** The span attribute every span of an approval carries: its idempotency key. */
export const KEY_ATTRIBUTE = 'order.idempotency_key';

const TRACER_NAME = 'exactly-once-orders';

interface Installed {
  provider: NodeTracerProvider;
  processor: SpanProcessor;
  resource: Resource;
}

const load = createRequire(import.meta.url);

/**
 * The SDK's packages, loaded when tracing is installed: a process that does not trace never loads
 * them (a third of the modules an API process would load at start, an exporter per protocol among them).
 */
const sdk = {
  resources: () => load('@opentelemetry/resources') as typeof ResourcesPackage,
  traces: () => load('@opentelemetry/sdk-trace-node') as typeof TraceSdkPackage,
  temporal: () => load('@temporalio/interceptors-opentelemetry') as typeof TemporalTracingPackage,
};

/** The process's tracing, once installed; undefined means off. */
let installed: Installed | undefined;

/** Whether this process traces. Everything below is a no-op without it. */
export function tracingOn(): boolean {
  return installed !== undefined;
}

/**
 * Sets up the process's tracer provider once, before any Temporal client or worker is built (they
 * take their interceptors from here). `config` undefined (no OTEL_EXPORTER_OTLP_ENDPOINT) leaves
 * tracing off. The exporter reads the standard OTEL_EXPORTER_OTLP_* variables itself (headers,
 * timeout, the `/v1/traces` path); `spanProcessor` replaces it (tests: an in-memory exporter).
 */
export function installTracing(
  config: TracingConfig | undefined,
  processName: string,
  spanProcessor?: SpanProcessor,
): boolean {
  if (!config || installed) return installed !== undefined;
  // OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES, when set, win over the process's own name.
  const { Resource, envDetectorSync } = sdk.resources();
  const { BatchSpanProcessor, NodeTracerProvider } = sdk.traces();
  const resource = new Resource({ 'service.name': `orders-${processName}` }).merge(envDetectorSync.detect());
  const processor = spanProcessor ?? new BatchSpanProcessor(exporterFor(config.protocol));
  const provider = new NodeTracerProvider({ resource, spanProcessors: [processor] });
  // The AsyncLocalStorage context manager and the W3C propagators (OTEL_PROPAGATORS honoured).
  provider.register();
  installed = { provider, processor, resource };
  return true;
}

/** The tracing settings as the start-up log shows them: the receiver's URL may carry credentials. */
export function tracingForLog(config: TracingConfig | undefined): TracingConfig | undefined {
  return config && { ...config, endpoint: redactUrl(config.endpoint) };
}

function exporterFor(protocol: TracingConfig['protocol']): SpanExporter {
  switch (protocol) {
    case 'grpc':
      return new (load('@opentelemetry/exporter-trace-otlp-grpc') as typeof GrpcExporterPackage).OTLPTraceExporter();
    case 'http/json':
      return new (load('@opentelemetry/exporter-trace-otlp-http') as typeof JsonExporterPackage).OTLPTraceExporter();
    case 'http/protobuf':
      return new (
        load('@opentelemetry/exporter-trace-otlp-proto') as typeof ProtobufExporterPackage
      ).OTLPTraceExporter();
  }
}

/** Exports what is still buffered and stops; called once on the way out of every process. */
export async function shutdownTracing(): Promise<void> {
  const current = installed;
  installed = undefined;
  if (!current) return;
  await current.provider.shutdown();
  trace.disable();
  propagation.disable();
  context.disable();
}

/** The Temporal client's interceptors: the start carries the caller's trace into the workflow. */
export function tracingClientInterceptors(): ClientInterceptors | undefined {
  if (!installed) return undefined;
  return { workflow: [new (sdk.temporal().OpenTelemetryWorkflowClientInterceptor)(), keyOnClientSpans] };
}

/** The worker's side: the workflow interceptors in the bundle, the activity spans, the workflow spans' sink. */
export interface WorkerTracing {
  workflowInterceptorModules: string[];
  interceptors: Required<Pick<NonNullable<WorkerOptions['interceptors']>, 'activity'>>;
  sinks: InjectedSinks<OpenTelemetrySinks>;
}

/** The modules tracing adds to the workflow bundle (the prebuilt traced bundle is made with them). */
export function workflowTracingModules(): string[] {
  return [load.resolve('@temporalio/interceptors-opentelemetry/lib/workflow-interceptors')];
}

export function workerTracing(): WorkerTracing | undefined {
  if (!installed) return undefined;
  const { makeWorkflowExporter, OpenTelemetryActivityInboundInterceptor } = sdk.temporal();
  const exporter = makeWorkflowExporter(installed.processor, installed.resource);
  return {
    // The package's workflow interceptors run inside the workflow sandbox: they trace the run and
    // every activity it schedules, local ones included, and hand their spans to the sink below.
    workflowInterceptorModules: workflowTracingModules(),
    interceptors: {
      activity: [
        (ctx) => ({ inbound: new OpenTelemetryActivityInboundInterceptor(ctx) }),
        // Inside the span above: the activity's own span gets the key of its workflow.
        (ctx) => ({ inbound: keyOnActivitySpan(ctx.info.workflowExecution?.workflowId) }),
      ],
    },
    sinks: {
      exporter: {
        export: {
          fn: (info, spans) => {
            const key = idempotencyKeyOfWorkflowId(info.workflowId);
            if (key) for (const span of spans) Object.assign(span.attributes, { [KEY_ATTRIBUTE]: key });
            return exporter.export.fn(info, spans);
          },
        },
      },
    },
  };
}

/** Tags the span in scope (a request's, a tool call's) with the key, once the key is known. */
export function tagSpanWithKey(key: string): void {
  if (!installed) return;
  trace.getActiveSpan()?.setAttribute(KEY_ATTRIBUTE, key);
}

/** What a span of our own stands for: a request served, a request made, a message sent, or a step of our own. */
export type SpanRole = 'server' | 'client' | 'producer' | 'internal';
const SPAN_KINDS: Record<SpanRole, SpanKind> = {
  server: SpanKind.SERVER,
  client: SpanKind.CLIENT,
  producer: SpanKind.PRODUCER,
  internal: SpanKind.INTERNAL,
};

/**
 * A failure's `error.type`: its class in the one classification table (`DownstreamTimeout`,
 * `BrokerUnroutable`), low-cardinality as the semantic conventions ask, and the name operators
 * already see in metrics and logs.
 */
export function errorTypeOf(error: unknown): string {
  return classifyError(error).errorClass;
}

/**
 * A span of our own around `fn`, a child of the span in scope (a root when there is none), in
 * scope while `fn` runs and ended with it; a failure is recorded on it, with its `error.type`
 * (`errorType`, by default `errorTypeOf`). Off: just `fn`.
 */
export async function inSpan<T>(
  name: string,
  role: SpanRole,
  attributes: Attributes,
  fn: (span: Span | undefined) => Promise<T>,
  errorType: (error: unknown) => string = errorTypeOf,
): Promise<T> {
  if (!installed) return fn(undefined);
  const tracer = installed.provider.getTracer(TRACER_NAME);
  return tracer.startActiveSpan(name, { kind: SPAN_KINDS[role], attributes }, (span) =>
    fn(span).then(
      (result) => {
        span.end();
        return result;
      },
      (error: unknown) => {
        const message = messageOf(error);
        span.recordException(error instanceof Error ? error : message);
        span.setAttribute('error.type', errorType(error));
        span.setStatus({ code: SpanStatusCode.ERROR, message });
        span.end();
        throw error;
      },
    ),
  );
}

/** Starts a request's server span, joining the caller's trace when its headers carry one. */
export function startServerSpan(
  name: string,
  headers: Record<string, unknown>,
  attributes: Attributes,
): Span | undefined {
  if (!installed) return undefined;
  const parent = propagation.extract(ROOT_CONTEXT, headers);
  return installed.provider.getTracer(TRACER_NAME).startSpan(name, { kind: SpanKind.SERVER, attributes }, parent);
}

/** Runs `fn` with `span` in scope, so what it starts (spans, workflow starts) is the span's child. */
export function withinSpan<T>(span: Span | undefined, fn: () => T): T {
  if (!span) return fn();
  return context.with(trace.setSpan(context.active(), span), fn);
}

/** The W3C headers (`traceparent`, `tracestate`) of the span in scope, for an outgoing request. */
export function traceHeaders(): Record<string, string> {
  if (!installed) return {};
  const carrier: Record<string, string> = {};
  propagation.inject(context.active(), carrier);
  return carrier;
}

/**
 * The client's start and signal spans (StartWorkflow:…, UpdateWithStart:…, SignalWorkflow:…) are
 * made by Temporal's interceptor, which runs outside this one: the span in scope here is that span.
 */
const keyOnClientSpans: WorkflowClientInterceptor = {
  startWithDetails: tagging((input: WorkflowStartInput) => input.options.workflowId),
  startUpdateWithStart: tagging((input: WorkflowStartUpdateWithStartInput) => input.workflowStartOptions.workflowId),
  signalWithStart: tagging((input: WorkflowSignalWithStartInput) => input.options.workflowId),
  signal: tagging((input: WorkflowSignalInput) => input.workflowExecution.workflowId),
  startUpdate: tagging((input: WorkflowStartUpdateInput) => input.workflowExecution.workflowId),
};

/** A client interceptor's method that tags the span in scope with the key of the call's workflow. */
function tagging<Input, Output>(workflowIdOf: (input: Input) => string) {
  return (input: Input, next: (input: Input) => Output): Output => {
    tagWithKeyOf(workflowIdOf(input));
    return next(input);
  };
}

function keyOnActivitySpan(workflowId: string | undefined): ActivityInboundCallsInterceptor {
  return {
    execute: (input, next) => {
      if (workflowId) tagWithKeyOf(workflowId);
      return next(input);
    },
  };
}

function tagWithKeyOf(workflowId: string): void {
  const key = idempotencyKeyOfWorkflowId(workflowId);
  if (key) trace.getActiveSpan()?.setAttribute(KEY_ATTRIBUTE, key);
}

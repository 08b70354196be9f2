// With OTEL_EXPORTER_OTLP_ENDPOINT unset, tracing adds nothing: no client or worker interceptors,
// no workflow module in the bundle, no headers on the downstream POST, and spans of our own are
// plain calls. (The trace itself, with tracing on: test/integration/tracing.test.ts.)
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { trace } from '@opentelemetry/api';
import { loadConfig } from '../../../../app/env.js';
import {
  inSpan,
  installTracing,
  traceHeaders,
  tracingClientInterceptors,
  tracingOn,
  workerTracing,
} from '../../../../services/telemetry/tracing.js';

describe('tracing when OTEL_EXPORTER_OTLP_ENDPOINT is unset', () => {
  it('installs nothing: no tracer provider, no interceptors, no sink, no workflow module', () => {
    assert.equal(installTracing(loadConfig({}).tracing, 'test'), false);
    assert.equal(tracingOn(), false);
    assert.equal(tracingClientInterceptors(), undefined);
    assert.equal(workerTracing(), undefined);
    assert.equal(trace.getActiveSpan(), undefined);
  });

  it('adds no headers to the downstream POST and runs a span of our own as a plain call', async () => {
    assert.deepEqual(traceHeaders(), {});
    assert.equal(await inSpan('POST', 'client', {}, (span) => Promise.resolve(span)), undefined);
  });
});

import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import fc from 'fast-check';
import { parseAllDocuments } from 'yaml';
import { loadConfig, secretSettingNames, settingNames } from '../../../app/env.js';
import { ConfigError } from '../../../services/config/environment.js';
import {
  CREDENTIAL_URL_SETTINGS,
  isPlaceholderSecret,
  urlPassword,
} from '../../../services/config/production-refusals.js';
import { dingtalk as dingtalkModule } from '../../../vendors/dingtalk/index.js';
import { feishu as feishuModule } from '../../../vendors/feishu/index.js';
import { connectorStates, oaVendorApiSettings, vendorConfig } from '../../../vendors/settings.js';
import { wecom as wecomModule } from '../../../vendors/wecom/index.js';

/** Every setting that holds a secret as it is: the service's own and each OA vendor's. */
const SECRET_SETTINGS = secretSettingNames();

function problemsOf(env: Record<string, string>): string[] {
  try {
    loadConfig(env);
  } catch (error) {
    assert.ok(error instanceof ConfigError);
    return [...error.problems];
  }
  assert.fail('expected the configuration to be refused');
}

/** A DOWNSTREAM_SECRET for the settings that need one. */
const SIGNING = 'downstream-secret-0123456789';

describe('configuration', () => {
  it('has the documented defaults', () => {
    const config = loadConfig({});
    assert.equal(config.temporal.namespace, 'default');
    assert.equal(config.temporal.taskQueue, 'order-submission');
    assert.equal(config.http.port, 3000);
    assert.deepEqual(
      {
        attempts: config.writePolicy.maxAttempts,
        initial: config.writePolicy.initialIntervalMs,
        max: config.writePolicy.maxIntervalMs,
        statement: config.writePolicy.statementTimeoutMs,
        startToClose: config.writePolicy.startToCloseMs,
        scheduleToClose: config.writePolicy.scheduleToCloseMs,
      },
      { attempts: 3, initial: 500, max: 30_000, statement: 2_000, startToClose: 5_000, scheduleToClose: 60_000 },
    );
    assert.equal(config.retentionDays, 30);
    assert.deepEqual(config.mcp, {
      token: undefined,
      previousToken: undefined,
      submitWaitMs: 8_000,
      operatorTools: false,
      operatorToken: undefined,
      allowedOrigins: [],
    });
    assert.equal(config.statusToken, undefined);
    assert.equal(config.http.hostsWorker, false);
  });

  it('reads API_HOSTS_WORKER as a switch, naming it when the value is not one', () => {
    assert.equal(loadConfig({ API_HOSTS_WORKER: '1' }).http.hostsWorker, true);
    assert.equal(loadConfig({ API_HOSTS_WORKER: 'true' }).http.hostsWorker, true);
    assert.equal(loadConfig({ API_HOSTS_WORKER: '0' }).http.hostsWorker, false);
    assert.match(problemsOf({ API_HOSTS_WORKER: 'on' }).join('\n'), /^API_HOSTS_WORKER:/m);
  });

  it('turns Worker Deployment Versioning on with a deployment name and a build id, and leaves it off without', () => {
    assert.equal(loadConfig({}).worker.deployment, undefined);
    assert.deepEqual(
      loadConfig({ TEMPORAL_DEPLOYMENT_NAME: 'orders', TEMPORAL_BUILD_ID: '2026.12.1' }).worker.deployment,
      {
        deploymentName: 'orders',
        buildId: '2026.12.1',
      },
    );
  });

  it("reads the Temporal Worker Controller's names: TEMPORAL_WORKER_BUILD_ID and a `<namespace>/<name>` deployment", () => {
    assert.deepEqual(
      loadConfig({ TEMPORAL_DEPLOYMENT_NAME: 'orders/orders-worker', TEMPORAL_WORKER_BUILD_ID: '5f7c9d-8b6d4' }).worker
        .deployment,
      { deploymentName: 'orders/orders-worker', buildId: '5f7c9d-8b6d4' },
    );
    // The same id under both names is one build; two ids are refused, naming both settings.
    assert.equal(
      loadConfig({ TEMPORAL_DEPLOYMENT_NAME: 'orders', TEMPORAL_BUILD_ID: 'b1', TEMPORAL_WORKER_BUILD_ID: 'b1' }).worker
        .deployment?.buildId,
      'b1',
    );
    assert.match(
      problemsOf({ TEMPORAL_DEPLOYMENT_NAME: 'orders', TEMPORAL_BUILD_ID: 'b1', TEMPORAL_WORKER_BUILD_ID: 'b2' }).join(
        '\n',
      ),
      /^TEMPORAL_BUILD_ID and TEMPORAL_WORKER_BUILD_ID: two different build ids/m,
    );
    assert.match(problemsOf({ TEMPORAL_WORKER_BUILD_ID: 'b1' }).join('\n'), /^TEMPORAL_DEPLOYMENT_NAME: required/m);
  });

  it('refuses a deployment name without a build id, and a build id without a deployment name, naming the missing one', () => {
    assert.match(
      problemsOf({ TEMPORAL_DEPLOYMENT_NAME: 'orders' }).join('\n'),
      /^TEMPORAL_BUILD_ID \(or TEMPORAL_WORKER_BUILD_ID\): required/m,
    );
    assert.match(problemsOf({ TEMPORAL_BUILD_ID: '2026.12.1' }).join('\n'), /^TEMPORAL_DEPLOYMENT_NAME: required/m);
  });

  it('reads the MCP settings: token, tool wait and operator tools', () => {
    const config = loadConfig({
      MCP_TOKEN: 'a-long-enough-token',
      MCP_SUBMIT_WAIT_MS: '9000',
      MCP_OPERATOR_TOOLS: '1',
    });
    assert.deepEqual(config.mcp, {
      token: 'a-long-enough-token',
      previousToken: undefined,
      submitWaitMs: 9_000,
      operatorTools: true,
      operatorToken: undefined,
      allowedOrigins: [],
    });
    assert.equal(loadConfig({ MCP_OPERATOR_TOOLS: 'false' }).mcp.operatorTools, false);
    assert.match(problemsOf({ MCP_OPERATOR_TOOLS: 'yes' }).join('\n'), /^MCP_OPERATOR_TOOLS:/m);
    assert.match(problemsOf({ MCP_TOKEN: 'short' }).join('\n'), /^MCP_TOKEN:/m);
  });

  it('reads MCP_OPERATOR_TOKEN and STATUS_TOKEN, each held to the floor of every shared secret', () => {
    const config = loadConfig({
      MCP_TOKEN: 'the-submit-token-0123',
      MCP_OPERATOR_TOKEN: 'the-operator-token-0123',
      STATUS_TOKEN: 'the-status-token-0123',
    });
    assert.equal(config.mcp.operatorToken, 'the-operator-token-0123');
    assert.equal(config.statusToken, 'the-status-token-0123');
    for (const name of ['MCP_OPERATOR_TOKEN', 'STATUS_TOKEN']) {
      assert.match(
        problemsOf({ [name]: 'short' }).join('\n'),
        new RegExp(`^${name}: must be at least 16 characters`, 'm'),
      );
    }
  });

  it('refuses an operator token equal to the submit token or the one it replaces, without repeating it', () => {
    const token = 'the-same-token-0123456789';
    const other = 'another-token-0123456789';
    for (const [env, equals] of [
      [{ MCP_TOKEN: token, MCP_OPERATOR_TOKEN: token }, 'MCP_TOKEN'],
      [{ MCP_TOKEN: other, MCP_TOKEN_PREVIOUS: token, MCP_OPERATOR_TOKEN: token }, 'MCP_TOKEN_PREVIOUS'],
    ] as const) {
      const problems = problemsOf(env).join('\n');
      assert.match(problems, new RegExp(`^MCP_OPERATOR_TOKEN: equals ${equals}; the operator token must differ`, 'm'));
      assert.doesNotMatch(problems, new RegExp(token));
    }
  });

  it('reads MCP_ALLOWED_ORIGINS as a list of origins, each in the form a browser sends it', () => {
    assert.deepEqual(
      loadConfig({ MCP_ALLOWED_ORIGINS: 'https://Agent.example, http://localhost:6274,http://127.0.0.1:80/' }).mcp
        .allowedOrigins,
      ['https://agent.example', 'http://localhost:6274', 'http://127.0.0.1'],
    );
    assert.deepEqual(loadConfig({ MCP_ALLOWED_ORIGINS: ' , ' }).mcp.allowedOrigins, []);
  });

  it('stops on an allowed origin that is not one (a path, a query, credentials, no scheme), naming MCP_ALLOWED_ORIGINS', () => {
    for (const entry of [
      'https://agent.example/app',
      'https://agent.example?x=1',
      'agent.example',
      '*',
      'null',
      'https://user:origin-password@agent.example',
    ]) {
      const problems = problemsOf({ MCP_ALLOWED_ORIGINS: `https://fine.example,${entry}` }).join('\n');
      assert.match(problems, /^MCP_ALLOWED_ORIGINS: .* is not an origin/m, entry);
      assert.doesNotMatch(problems, /origin-password/, 'the message shows no credentials');
    }
  });

  it('stops on a malformed value, naming the variable', () => {
    assert.match(problemsOf({ PORT: 'eighty' }).join('\n'), /^PORT:/m);
    assert.match(problemsOf({ RETRY_MAX_ATTEMPTS: '0' }).join('\n'), /^RETRY_MAX_ATTEMPTS:/m);
    assert.match(problemsOf({ DATABASE_URL: 'mongodb://x' }).join('\n'), /^DATABASE_URL:/m);
    assert.match(problemsOf({ DATABASE_URL: 'mysql://' }).join('\n'), /^DATABASE_URL:/m);
    assert.match(problemsOf({ TEMPORAL_ADDRESS: 'localhost' }).join('\n'), /^TEMPORAL_ADDRESS:/m);
  });

  it('refuses a timeout ladder that is upside down', () => {
    assert.match(
      problemsOf({ DB_STATEMENT_TIMEOUT_MS: '6000', ACTIVITY_START_TO_CLOSE_MS: '5000' }).join('\n'),
      /DB_STATEMENT_TIMEOUT_MS: must be below ACTIVITY_START_TO_CLOSE_MS/,
    );
    assert.match(
      problemsOf({ ACTIVITY_START_TO_CLOSE_MS: '70000' }).join('\n'),
      /ACTIVITY_START_TO_CLOSE_MS: must be below ACTIVITY_SCHEDULE_TO_CLOSE_MS/,
    );
  });

  it('reads the broker settings: off without AMQP_URL, the exchange and confirm timeout below one attempt', () => {
    assert.equal(loadConfig({}).broker, undefined);
    assert.deepEqual(
      loadConfig({ AMQP_URL: 'amqps://u:p@mq.example:5671/orders', DOWNSTREAM_SECRET: SIGNING }).broker,
      {
        url: 'amqps://u:p@mq.example:5671/orders',
        secret: SIGNING,
        previousSecret: undefined,
        exchange: 'orders',
        confirmTimeoutMs: 3_000,
      },
    );
    assert.match(problemsOf({ AMQP_URL: 'http://mq.example' }).join('\n'), /^AMQP_URL: must be an amqp:\/\//m);
    // Without a host amqplib would quietly publish to whatever broker runs on localhost.
    for (const hostless of ['amqp://', 'amqp:///orders', 'amqp:mq']) {
      assert.match(problemsOf({ AMQP_URL: hostless }).join('\n'), /^AMQP_URL: names no host/m, hostless);
    }
    assert.match(problemsOf({ ORDER_EVENTS_EXCHANGE: 'amq.topic' }).join('\n'), /^ORDER_EVENTS_EXCHANGE:/m);
    assert.match(problemsOf({ ORDER_EVENTS_EXCHANGE: 'orders events' }).join('\n'), /^ORDER_EVENTS_EXCHANGE:/m);
    assert.match(
      problemsOf({ AMQP_URL: 'amqp://mq', AMQP_CONFIRM_TIMEOUT_MS: '5000', ACTIVITY_START_TO_CLOSE_MS: '5000' }).join(
        '\n',
      ),
      /AMQP_CONFIRM_TIMEOUT_MS: must be below ACTIVITY_START_TO_CLOSE_MS/,
    );
    // Without a broker its timeout is no rung: a short attempt needs no broker setting.
    assert.equal(
      loadConfig({ ACTIVITY_START_TO_CLOSE_MS: '3000', DOWNSTREAM_TIMEOUT_MS: '2000' }).writePolicy.startToCloseMs,
      3_000,
    );
  });

  it('refuses AMQP_URL without DOWNSTREAM_SECRET, naming both: every broker message is signed', () => {
    const problems = problemsOf({ AMQP_URL: 'amqp://mq.example' });
    assert.deepEqual(problems, ['DOWNSTREAM_SECRET: required when AMQP_URL is set (broker messages are signed)']);
    // Signed with both secrets during a rotation, as the HTTP event is.
    const rotating = loadConfig({
      AMQP_URL: 'amqp://mq.example',
      DOWNSTREAM_SECRET: SIGNING,
      DOWNSTREAM_SECRET_PREVIOUS: 'the-old-downstream-secret',
    }).broker;
    assert.deepEqual([rotating?.secret, rotating?.previousSecret], [SIGNING, 'the-old-downstream-secret']);
    // A secret alone, for HTTP events that are not sent, is no broker.
    assert.equal(loadConfig({ DOWNSTREAM_SECRET: SIGNING }).broker, undefined);
  });

  it('refuses an MCP tool wait that is not above one write attempt, or that reaches the client timeout', () => {
    assert.match(
      problemsOf({ MCP_SUBMIT_WAIT_MS: '5000', ACTIVITY_START_TO_CLOSE_MS: '5000' }).join('\n'),
      /MCP_SUBMIT_WAIT_MS: must be above ACTIVITY_START_TO_CLOSE_MS/,
    );
    assert.match(problemsOf({ MCP_SUBMIT_WAIT_MS: '60000' }).join('\n'), /^MCP_SUBMIT_WAIT_MS:/m);
    assert.equal(
      loadConfig({ MCP_SUBMIT_WAIT_MS: '5001', ACTIVITY_START_TO_CLOSE_MS: '5000' }).mcp.submitWaitMs,
      5_001,
    );
  });

  it('honours a webhook wait up to what WEBHOOK_MAX_WAIT_MS leaves after the start deadline, in whole seconds', () => {
    assert.equal(loadConfig({}).http.maxWaitSeconds, 20);
    assert.equal(loadConfig({ WEBHOOK_MAX_WAIT_MS: '9500', WEBHOOK_START_TIMEOUT_MS: '3000' }).http.maxWaitSeconds, 6);
    assert.match(
      problemsOf({ WEBHOOK_START_TIMEOUT_MS: '1000' }).join('\n'),
      /WEBHOOK_START_TIMEOUT_MS: must be at least 1500/,
      'a deadline that leaves the claim and the start under a second is refused',
    );
    assert.equal(loadConfig({ WEBHOOK_START_TIMEOUT_MS: '1500' }).http.startTimeoutMs, 1500);
    assert.match(
      problemsOf({ WEBHOOK_MAX_WAIT_MS: '5500', WEBHOOK_START_TIMEOUT_MS: '5000' }).join('\n'),
      /WEBHOOK_MAX_WAIT_MS: must be at least 1000 above WEBHOOK_START_TIMEOUT_MS/,
    );
    assert.match(problemsOf({ WEBHOOK_MAX_WAIT_MS: '26000' }).join('\n'), /^WEBHOOK_MAX_WAIT_MS:/m);
  });

  it('bounds how long a request may take to arrive and how many connections stay open, by default and as set', () => {
    const { requestTimeoutMs, maxConnections, maxConnectionsPerClient } = loadConfig({}).http;
    assert.deepEqual(
      { requestTimeoutMs, maxConnections, maxConnectionsPerClient },
      { requestTimeoutMs: 10_000, maxConnections: 512, maxConnectionsPerClient: 256 },
    );
    const set = loadConfig({
      HTTP_REQUEST_TIMEOUT_MS: '2500',
      HTTP_MAX_CONNECTIONS: '64',
      HTTP_MAX_CONNECTIONS_PER_CLIENT: '64',
    }).http;
    assert.deepEqual([set.requestTimeoutMs, set.maxConnections, set.maxConnectionsPerClient], [2500, 64, 64]);
    // 0 would be no clock and no cap at all: what a stranger needs to hold the memory and the stop.
    for (const [name, bad] of [
      ['HTTP_REQUEST_TIMEOUT_MS', '0'],
      ['HTTP_REQUEST_TIMEOUT_MS', '999'],
      ['HTTP_REQUEST_TIMEOUT_MS', '300001'],
      ['HTTP_REQUEST_TIMEOUT_MS', '5s'],
      ['HTTP_MAX_CONNECTIONS', '0'],
      ['HTTP_MAX_CONNECTIONS', '1.5'],
      ['HTTP_MAX_CONNECTIONS_PER_CLIENT', '0'],
      ['HTTP_MAX_CONNECTIONS_PER_CLIENT', 'many'],
    ] as const) {
      assert.match(problemsOf({ [name]: bad }).join('\n'), new RegExp(`^${name}:`, 'm'), `${name}=${bad}`);
    }
    assert.deepEqual(problemsOf({ HTTP_MAX_CONNECTIONS: '100', HTTP_MAX_CONNECTIONS_PER_CLIENT: '200' }), [
      'HTTP_MAX_CONNECTIONS_PER_CLIENT: 200 is above HTTP_MAX_CONNECTIONS (100); set it at most that',
    ]);
  });

  it('binds the metrics endpoint to 127.0.0.1 unless METRICS_HOST names another address', () => {
    assert.deepEqual(loadConfig({ METRICS_PORT: '9464' }).metrics, {
      host: '127.0.0.1',
      port: 9464,
      sampleIntervalMs: 15_000,
    });
    assert.equal(loadConfig({}).metrics, undefined, 'no METRICS_PORT, no endpoint');
    for (const host of ['0.0.0.0', '10.1.2.3', '::', '::1']) {
      assert.equal(loadConfig({ METRICS_PORT: '9464', METRICS_HOST: host }).metrics?.host, host);
    }
  });

  it('samples the gauges every METRICS_SAMPLE_INTERVAL_SECONDS, refusing what is not 1–3600 whole seconds', () => {
    const config = loadConfig({ METRICS_PORT: '9464', METRICS_SAMPLE_INTERVAL_SECONDS: '2' });
    assert.equal(config.metrics?.sampleIntervalMs, 2_000);
    for (const value of ['0', '3601', '1.5', 'often']) {
      const problems = problemsOf({ METRICS_PORT: '9464', METRICS_SAMPLE_INTERVAL_SECONDS: value });
      assert.equal(problems.length, 1, value);
      assert.match(problems[0] ?? '', /^METRICS_SAMPLE_INTERVAL_SECONDS:/, value);
    }
  });

  it('refuses a METRICS_HOST that is not an IP address, naming the variable', () => {
    for (const host of ['localhost', 'metrics.internal', '127.0.0.1:9464', '[::1]', '999.0.0.1', 'http://0.0.0.0']) {
      const problems = problemsOf({ METRICS_PORT: '9464', METRICS_HOST: host });
      assert.equal(problems.length, 1, host);
      assert.match(problems[0] ?? '', /^METRICS_HOST: must be an IP address/, host);
    }
  });

  it('serves the worker probes only with WORKER_HEALTH_PORT, on 127.0.0.1 unless WORKER_HEALTH_HOST says', () => {
    assert.equal(loadConfig({}).worker.health, undefined, 'no WORKER_HEALTH_PORT, no listener');
    assert.deepEqual(loadConfig({ WORKER_HEALTH_PORT: '8081' }).worker.health, { host: '127.0.0.1', port: 8081 });
    assert.deepEqual(loadConfig({ WORKER_HEALTH_PORT: '8081', WORKER_HEALTH_HOST: '0.0.0.0' }).worker.health, {
      host: '0.0.0.0',
      port: 8081,
    });
    assert.match(problemsOf({ WORKER_HEALTH_PORT: '70000' })[0] ?? '', /^WORKER_HEALTH_PORT:/);
    assert.match(
      problemsOf({ WORKER_HEALTH_PORT: '8081', WORKER_HEALTH_HOST: 'localhost' })[0] ?? '',
      /^WORKER_HEALTH_HOST: must be an IP address/,
    );
    assert.deepEqual(problemsOf({ WORKER_HEALTH_PORT: '9464', METRICS_PORT: '9464' }), [
      "WORKER_HEALTH_PORT: 9464 is also METRICS_PORT; the worker's probes need a port of their own",
    ]);
  });

  it('has every variable it reads documented in docs/configuration.md', () => {
    const doc = readFileSync(new URL('../../../docs/configuration.md', import.meta.url), 'utf8');
    const names = settingNames();
    const undocumented = names.filter((name) => !doc.includes(`\`${name}\``));
    assert.deepEqual(undocumented, [], 'each variable is named in docs/configuration.md');
    assert.ok(names.length > 50, `the variables are read (${names.length})`);
  });

  it('leaves WEBHOOK_SECRET to the one entry point that uses it: worker, CLI and MCP start without it', () => {
    assert.equal(loadConfig({ NODE_ENV: 'production' }).webhook.secret, undefined);
    assert.match(
      problemsOf({ WEBHOOK_SECRET: 'short' }).join('\n'),
      /^WEBHOOK_SECRET: must be at least 16 characters/m,
    );
  });

  it('refuses a URL it calls that carries a user or password, without repeating them', () => {
    for (const name of ['DOWNSTREAM_URL', 'FEISHU_API_BASE_URL', 'DINGTALK_API_BASE_URL', 'WECOM_API_BASE_URL']) {
      const problems = problemsOf({ [name]: 'https://erp:hunter2-password@erp.example/hook?code=abc' }).join('\n');
      assert.match(problems, new RegExp(`^${name}: must not carry a user or password`, 'm'));
      assert.doesNotMatch(problems, /hunter2|code=abc/);
    }
    assert.equal(
      loadConfig({ DOWNSTREAM_URL: 'https://erp.example/hook?code=abc', DOWNSTREAM_SECRET: 'a-downstream-secret-0123' })
        .downstream?.url,
      'https://erp.example/hook?code=abc',
    );
  });

  it('reads the signature scheme and the previous secrets of a rotation', () => {
    assert.equal(loadConfig({}).webhook.signatureScheme, 'oa');
    const config = loadConfig({
      WEBHOOK_SIGNATURE_SCHEME: 'standard',
      WEBHOOK_SECRET: 'the-new-webhook-secret',
      WEBHOOK_SECRET_PREVIOUS: 'the-old-webhook-secret',
      DOWNSTREAM_URL: 'http://127.0.0.1:4000/events',
      DOWNSTREAM_SECRET: 'whsec_' + Buffer.alloc(24, 7).toString('base64'),
      DOWNSTREAM_SECRET_PREVIOUS: 'the-old-downstream-secret',
    });
    assert.equal(config.webhook.signatureScheme, 'standard');
    assert.equal(config.webhook.previousSecret, 'the-old-webhook-secret');
    assert.equal(config.downstream?.previousSecret, 'the-old-downstream-secret');
    const mcp = loadConfig({ MCP_TOKEN: 'the-new-mcp-token-0123', MCP_TOKEN_PREVIOUS: 'the-old-mcp-token-0123' }).mcp;
    assert.equal(mcp.previousToken, 'the-old-mcp-token-0123');
    assert.match(problemsOf({ WEBHOOK_SIGNATURE_SCHEME: 'svix' }).join('\n'), /^WEBHOOK_SIGNATURE_SCHEME:/m);
  });

  it('refuses a previous secret without the one replacing it, or equal to it, and a whsec_ secret that is not base64', () => {
    assert.match(
      problemsOf({ WEBHOOK_SECRET_PREVIOUS: 'the-old-webhook-secret' }).join('\n'),
      /^WEBHOOK_SECRET_PREVIOUS: only with WEBHOOK_SECRET/m,
    );
    assert.match(
      problemsOf({ MCP_TOKEN_PREVIOUS: 'the-old-mcp-token-0123' }).join('\n'),
      /^MCP_TOKEN_PREVIOUS: only with MCP_TOKEN/m,
    );
    assert.match(
      problemsOf({
        DOWNSTREAM_SECRET: 'the-same-secret-twice',
        DOWNSTREAM_SECRET_PREVIOUS: 'the-same-secret-twice',
      }).join('\n'),
      /^DOWNSTREAM_SECRET_PREVIOUS: equals DOWNSTREAM_SECRET/m,
    );
    assert.match(
      problemsOf({ WEBHOOK_SIGNATURE_SCHEME: 'standard', WEBHOOK_SECRET: 'whsec_this is not base64!' }).join('\n'),
      /^WEBHOOK_SECRET: a whsec_/m,
    );
    // In the oa scheme the secret's bytes sign as they are: a whsec_ prefix is just characters.
    assert.equal(
      loadConfig({ WEBHOOK_SECRET: 'whsec_this is not base64!' }).webhook.secret,
      'whsec_this is not base64!',
    );
    assert.match(
      problemsOf({ DOWNSTREAM_SECRET_PREVIOUS: 'whsec_c2hvcnQ=' }).join('\n'),
      /^DOWNSTREAM_SECRET_PREVIOUS:/m,
    );
  });

  it('keeps an MCP tool answer, its wait and a start confirmed after it, below the 60 s MCP clients wait', () => {
    assert.match(
      problemsOf({ MCP_SUBMIT_WAIT_MS: '50000', WEBHOOK_START_TIMEOUT_MS: '15000' }).join('\n'),
      /^MCP_SUBMIT_WAIT_MS: with WEBHOOK_START_TIMEOUT_MS must stay below the 60 s/m,
    );
    assert.equal(loadConfig({ MCP_SUBMIT_WAIT_MS: '50000', WEBHOOK_START_TIMEOUT_MS: '9000' }).mcp.submitWaitMs, 50000);
  });

  it('ignores a variable it does not know, whatever its value: the environment is shared with other programs', () => {
    assert.deepEqual(
      loadConfig({ NODE_ENV: 'test', ORDERS_UNKNOWN_SETTING: 'anything' }),
      loadConfig({ NODE_ENV: 'test' }),
    );
  });

  it('turns traces on only with OTEL_EXPORTER_OTLP_ENDPOINT, an http(s) URL, and reads the protocol the SDK way', () => {
    assert.equal(loadConfig({}).tracing, undefined);
    assert.equal(loadConfig({ OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc' }).tracing, undefined);
    assert.deepEqual(loadConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318' }).tracing, {
      endpoint: 'http://collector:4318',
      protocol: 'http/protobuf',
    });
    const traces = (env: Record<string, string>) =>
      loadConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: 'https://collector:4317', ...env }).tracing?.protocol;
    assert.equal(traces({ OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc' }), 'grpc');
    assert.equal(
      traces({ OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc', OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: 'http/json' }),
      'http/json',
    );
    assert.match(
      problemsOf({ OTEL_EXPORTER_OTLP_ENDPOINT: 'collector:4318' }).join('\n'),
      /^OTEL_EXPORTER_OTLP_ENDPOINT: must be an http\(s\) URL/m,
    );
    assert.match(
      problemsOf({ OTEL_EXPORTER_OTLP_ENDPOINT: 'ftp://collector' }).join('\n'),
      /^OTEL_EXPORTER_OTLP_ENDPOINT:/m,
    );
    assert.match(problemsOf({ OTEL_EXPORTER_OTLP_PROTOCOL: 'http' }).join('\n'), /^OTEL_EXPORTER_OTLP_PROTOCOL:/m);
    // The SDK's own off switch wins over the endpoint.
    const endpoint = { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318' };
    assert.equal(loadConfig({ ...endpoint, OTEL_SDK_DISABLED: 'TRUE' }).tracing, undefined);
    assert.ok(loadConfig({ ...endpoint, OTEL_SDK_DISABLED: 'false' }).tracing);
    assert.match(problemsOf({ OTEL_SDK_DISABLED: 'yes' }).join('\n'), /^OTEL_SDK_DISABLED: must be true or false/m);
  });
});

describe('DingTalk’s event mode (DINGTALK_EVENT_MODE)', () => {
  const MAPPING = new URL('../../../examples/oa-form-mapping.json', import.meta.url).pathname;
  const app = { DINGTALK_APP_KEY: 'ding-app-key', DINGTALK_APP_SECRET: 'ding-app-secret', OA_FORM_MAPPING: MAPPING };
  const callbackKeys = { DINGTALK_AES_KEY: 'a'.repeat(43), DINGTALK_TOKEN: 'ding-token' };

  it('is callback by default: the callback’s four settings turn the connector on, with no Stream', () => {
    const dingtalk = vendorConfig(dingtalkModule, loadConfig({ ...app, ...callbackKeys }).connectors);
    assert.equal(dingtalk?.stream, false);
    assert.deepEqual(dingtalk?.callback, { aesKey: 'a'.repeat(43), token: 'ding-token' });
  });

  it('in stream mode needs the app key and secret alone: the callback stays off without its keys', () => {
    const config = loadConfig({ ...app, DINGTALK_EVENT_MODE: 'stream' });
    const dingtalk = vendorConfig(dingtalkModule, config.connectors);
    assert.equal(dingtalk?.stream, true);
    assert.equal(dingtalk?.callback, undefined);
    assert.equal(dingtalk?.apiBaseUrl, 'https://api.dingtalk.com', 'the endpoint is asked of DINGTALK_API_BASE_URL');
    assert.deepEqual(connectorStates(config).vendors.dingtalk, ['stream'], 'the start-up log names the one door');
  });

  it('in stream mode keeps the callback on beside it while both its keys are set: both doors during a move', () => {
    const config = loadConfig({ ...app, ...callbackKeys, DINGTALK_EVENT_MODE: 'stream' });
    const dingtalk = vendorConfig(dingtalkModule, config.connectors);
    assert.equal(dingtalk?.stream, true);
    assert.equal(dingtalk?.callback?.token, 'ding-token');
    assert.deepEqual(connectorStates(config).vendors.dingtalk, ['callback', 'stream']);
  });

  it('refuses stream mode without the app key or secret, and a callback key without the other, naming them', () => {
    assert.match(
      problemsOf({ DINGTALK_EVENT_MODE: 'stream', OA_FORM_MAPPING: MAPPING }).join('\n'),
      /^DINGTALK_APP_KEY, DINGTALK_APP_SECRET: required with DINGTALK_EVENT_MODE=stream/m,
    );
    assert.match(
      problemsOf({ ...app, DINGTALK_APP_SECRET: '', DINGTALK_EVENT_MODE: 'stream' }).join('\n'),
      /^DINGTALK_APP_SECRET: required with DINGTALK_EVENT_MODE=stream/m,
    );
    assert.match(
      problemsOf({ ...app, DINGTALK_TOKEN: 'ding-token', DINGTALK_EVENT_MODE: 'stream' }).join('\n'),
      /^DINGTALK_AES_KEY: required with DINGTALK_TOKEN/m,
    );
    assert.match(problemsOf({ ...app, DINGTALK_EVENT_MODE: 'websocket' }).join('\n'), /^DINGTALK_EVENT_MODE: /m);
  });

  it('in callback mode still refuses the app settings without the callback’s keys', () => {
    assert.match(
      problemsOf(app).join('\n'),
      /^DINGTALK_AES_KEY, DINGTALK_TOKEN: required with DINGTALK_APP_KEY, DINGTALK_APP_SECRET/m,
    );
  });
});

describe('what production refuses to run with (NODE_ENV=production)', () => {
  const MAPPING = fileURLToPath(new URL('../../../examples/oa-form-mapping.json', import.meta.url));
  /** Every secret and every connector set, each to a value of its own: accepted in production. */
  const OWN: Record<string, string> = {
    DATABASE_URL: 'postgresql://orders:a-password-of-its-own-0123@db.internal:5432/orders',
    DATABASE_MIGRATION_URL: 'postgresql://orders_owner:an-owner-password-0123@db-direct.internal:5432/orders',
    AMQP_URL: 'amqps://orders:a-broker-password-0123@mq.internal:5671',
    TEMPORAL_ADDRESS: 'orders.acct.tmprl.cloud:7233',
    TEMPORAL_API_KEY: 'temporal-api-key-of-its-own-0123',
    WEBHOOK_SECRET: 'webhook-secret-of-its-own-0123',
    WEBHOOK_SECRET_PREVIOUS: 'webhook-secret-before-it-0123',
    DOWNSTREAM_URL: 'https://erp.internal/events',
    DOWNSTREAM_SECRET: 'downstream-secret-of-its-own-0123',
    DOWNSTREAM_SECRET_PREVIOUS: 'downstream-secret-before-it-0123',
    MCP_TOKEN: 'mcp-token-of-its-own-0123456',
    MCP_TOKEN_PREVIOUS: 'mcp-token-before-it-0123456',
    OA_FORM_MAPPING: MAPPING,
    FEISHU_APP_ID: 'cli_0123456789abcdef',
    FEISHU_APP_SECRET: 'feishu-app-secret-of-its-own',
    FEISHU_ENCRYPT_KEY: 'feishu-encrypt-key-of-its-own',
    FEISHU_VERIFICATION_TOKEN: 'feishu-verification-token',
    DINGTALK_APP_KEY: 'ding-app-key',
    DINGTALK_APP_SECRET: 'ding-app-secret-of-its-own',
    DINGTALK_AES_KEY: 'b'.repeat(43),
    DINGTALK_TOKEN: 'ding-token-of-its-own',
    WECOM_CORP_ID: 'wecom-corp',
    WECOM_AGENT_SECRET: 'wecom-agent-secret-of-its-own',
    WECOM_TOKEN: 'wecom-token-of-its-own',
    WECOM_ENCODING_AES_KEY: 'c'.repeat(43),
  };
  const OUTSIDE_PRODUCTION = [{ NODE_ENV: 'test' }, { NODE_ENV: 'development' }, {}];

  /** The refusal's message; fails when the settings are accepted. */
  const refusal = (env: Record<string, string>): string => {
    try {
      loadConfig(env);
    } catch (error) {
      assert.ok(error instanceof ConfigError, String(error));
      return error.message;
    }
    return assert.fail('expected the configuration to be refused');
  };

  /** A placeholder as an operator may write it: any case, `-` or `_`, spaces around it. */
  const asWritten = (placeholder: string) =>
    fc
      .record({
        upper: fc.array(fc.boolean(), { minLength: placeholder.length, maxLength: placeholder.length }),
        separator: fc.constantFrom('-', '_', ' ', ''),
        around: fc.constantFrom('', ' ', '\t', '  '),
      })
      .map(
        ({ upper, separator, around }) =>
          around +
          [...placeholder.replace(/-/g, separator)]
            .map((c, i) => (upper[i] ? c.toUpperCase() : c.toLowerCase()))
            .join('') +
          around,
      );
  const placeholders = fc.oneof(
    fc.constantFrom('replace-me-with-32-random-characters', 'replace-me', 'changeme', 'change-me').chain(asWritten),
    // "replace-me…": whatever follows the words.
    fc.string({ minLength: 1, maxLength: 24 }).map((rest) => `replace-me-${rest}`),
    // How docs write "yours here", and a variable a shell or a compose file left unexpanded.
    fc.string({ minLength: 1, maxLength: 24 }).map((inner) => `<${inner}>`),
    fc.constantFrom(...SECRET_SETTINGS).map((name) => `\${${name}}`),
    fc.constantFrom(...SECRET_SETTINGS).map((name) => `$${name}`),
  );

  it('accepts every secret and connector set to a value of its own, over https://', () => {
    const config = loadConfig({ ...OWN, NODE_ENV: 'production' });
    assert.equal(vendorConfig(feishuModule, config.connectors)?.apiBaseUrl, 'https://open.feishu.cn');
    assert.equal(config.webhook.secret, OWN.WEBHOOK_SECRET);
    // A generated secret may begin with `$` or `<`: only a whole `${…}`, `$NAME` or `<…>` is a placeholder.
    for (const secret of ['$generated_0123456789abcdef', '<generated-0123456789abcdef']) {
      assert.equal(loadConfig({ ...OWN, NODE_ENV: 'production', MCP_TOKEN: secret }).mcp.token, secret);
    }
  });

  it("refuses a vendor's API over http://, naming the setting and not the URL; outside production it is taken", () => {
    fc.assert(
      fc.property(
        fc.constantFrom(...oaVendorApiSettings()),
        fc.constantFrom('http', 'HTTP', 'Http'),
        fc.domain(),
        fc.constantFrom('', '/', '/open-apis', ':8080/api'),
        (name, scheme, host, rest) => {
          const url = `${scheme}://${host}${rest}`;
          const message = refusal({ ...OWN, NODE_ENV: 'production', [name]: url });
          assert.match(message, new RegExp(`^\\s*${name}: must be an https:// URL in production`, 'm'));
          assert.equal(message.match(/^\s*[A-Z_]+:/gm)?.length, 1, `one problem: ${message}`);
          assert.ok(!message.includes(host), message);
          for (const outside of OUTSIDE_PRODUCTION) {
            const { connectors } = loadConfig({ ...OWN, ...outside, [name]: url });
            const taken: Record<string, { apiBaseUrl: string } | undefined> = {
              FEISHU_API_BASE_URL: vendorConfig(feishuModule, connectors),
              DINGTALK_API_BASE_URL: vendorConfig(dingtalkModule, connectors),
              WECOM_API_BASE_URL: vendorConfig(wecomModule, connectors),
            };
            assert.equal(new URL(taken[name]!.apiBaseUrl).host, new URL(url).host);
          }
        },
      ),
    );
  });

  it('refuses DOWNSTREAM_URL over http://, naming the setting and not the URL or its token; outside production it is taken', () => {
    fc.assert(
      fc.property(
        fc.constantFrom('http', 'HTTP', 'Http'),
        fc.domain(),
        fc.constantFrom('', '/events', ':8080/hooks/orders'),
        // A receiver's token in the query: a secret that would cross in clear.
        fc.stringMatching(/^[A-Za-z0-9_-]{16,32}$/),
        (scheme, host, rest, token) => {
          const url = `${scheme}://${host}${rest}?code=${token}`;
          const message = refusal({ ...OWN, NODE_ENV: 'production', DOWNSTREAM_URL: url });
          assert.match(message, /^\s*DOWNSTREAM_URL: must be an https:\/\/ URL in production/m);
          assert.equal(message.match(/^\s*[A-Z_]+:/gm)?.length, 1, `one problem: ${message}`);
          assert.ok(!message.includes(host) && !message.includes(token), message);
          for (const outside of OUTSIDE_PRODUCTION) {
            assert.equal(loadConfig({ ...OWN, ...outside, DOWNSTREAM_URL: url }).downstream?.url, url);
          }
        },
      ),
    );
  });

  it('refuses an amqp:// AMQP_URL that carries a password, never repeating it; amqps://, or amqp:// without one, is taken', () => {
    const password = fc
      .string({ minLength: 12, maxLength: 40 })
      .filter((value) => value.trim() !== '' && !isPlaceholderSecret(value));
    fc.assert(
      fc.property(
        fc.constantFrom('amqp', 'AMQP', 'Amqp'),
        fc.stringMatching(/^[a-z][a-z0-9_-]{0,15}$/),
        password,
        fc.constantFrom('mq.internal:5672', '10.0.0.7', '127.0.0.1:5672', '[::1]:5672'),
        fc.constantFrom('', '/', '/orders'),
        (scheme, user, secret, host, vhost) => {
          const url = `${scheme}://${user}:${encodeURIComponent(secret)}@${host}${vhost}`;
          assert.equal(urlPassword(url), secret);
          const message = refusal({ ...OWN, NODE_ENV: 'production', AMQP_URL: url });
          assert.match(message, /^\s*AMQP_URL: carries a password over amqp:\/\/.*production needs amqps:\/\//m);
          assert.equal(message.match(/^\s*[A-Z_]+:/gm)?.length, 1, `one problem: ${message}`);
          assert.ok(!message.includes(secret) && !message.includes(encodeURIComponent(secret)), message);
          // Over TLS the same URL is taken, and outside production the plain one is too.
          const overTls = url.replace(/^amqp:/i, 'amqps:');
          assert.equal(loadConfig({ ...OWN, NODE_ENV: 'production', AMQP_URL: overTls }).broker?.url, overTls);
          for (const outside of OUTSIDE_PRODUCTION) {
            assert.equal(loadConfig({ ...OWN, ...outside, AMQP_URL: url }).broker?.url, url);
          }
        },
      ),
    );
    // No password, no secret to read: amqplib logs in as guest (RabbitMQ admits guest from the
    // loopback alone), or as the user named, with nothing for it to send.
    for (const url of [
      'amqp://127.0.0.1:5672',
      'amqp://mq.internal/orders',
      'amqp://orders@mq.internal',
      'amqp://orders:@mq.internal',
    ]) {
      assert.equal(loadConfig({ ...OWN, NODE_ENV: 'production', AMQP_URL: url }).broker?.url, url);
    }
  });

  it('refuses a secret that is a placeholder, in any case and spacing, naming the setting and never the value', () => {
    fc.assert(
      fc.property(fc.constantFrom(...SECRET_SETTINGS), placeholders, (name, placeholder) => {
        assert.ok(isPlaceholderSecret(placeholder), JSON.stringify(placeholder));
        const message = refusal({ ...OWN, NODE_ENV: 'production', [name]: placeholder });
        assert.match(message, new RegExp(`^\\s*${name}: `, 'm'));
        assert.ok(!message.includes(placeholder.trim()), `the value is not repeated: ${message}`);
        // Outside production nothing changes: the value is taken, or refused as before, for its form.
        for (const outside of OUTSIDE_PRODUCTION) {
          try {
            loadConfig({ ...OWN, ...outside, [name]: placeholder });
          } catch (error) {
            assert.ok(error instanceof ConfigError);
            assert.doesNotMatch(error.message, /placeholder/);
          }
        }
      }),
    );
    // The examples' own value fits every setting's form: outside production it is simply taken.
    const example = 'replace-me-with-32-random-characters';
    assert.equal(loadConfig({ ...OWN, NODE_ENV: 'test', WEBHOOK_SECRET: example }).webhook.secret, example);
  });

  it('refuses a database or broker URL whose password is a placeholder, without repeating it', () => {
    fc.assert(
      fc.property(fc.constantFrom(...CREDENTIAL_URL_SETTINGS), placeholders, (name, placeholder) => {
        const url = OWN[name]!.replace(/:[^:@/]+@/, `:${encodeURIComponent(placeholder)}@`);
        assert.equal(urlPassword(url), placeholder);
        const message = refusal({ ...OWN, NODE_ENV: 'production', [name]: url });
        assert.match(message, new RegExp(`^\\s*${name}: its password is a placeholder`, 'm'));
        assert.ok(!message.includes(placeholder.trim()) && !message.includes(url), message);
        assert.doesNotThrow(() => loadConfig({ ...OWN, NODE_ENV: 'test', [name]: url }));
      }),
    );
  });
});

describe('the secrets the repository shows (deploy/, examples/, .env examples, docs/)', () => {
  const ROOT = fileURLToPath(new URL('../../..', import.meta.url));
  const NAMES: readonly string[] = [...SECRET_SETTINGS, ...CREDENTIAL_URL_SETTINGS];
  const filesUnder = (dir: string): string[] =>
    existsSync(path.join(ROOT, dir))
      ? readdirSync(path.join(ROOT, dir), { withFileTypes: true }).flatMap((entry) =>
          entry.isDirectory() ? filesUnder(`${dir}/${entry.name}`) : [`${dir}/${entry.name}`],
        )
      : [];

  interface Shown {
    where: string;
    name: string;
    value: string;
  }

  /** Every value a parsed YAML or JSON document gives a named setting: `NAME: value` and `{ name, value }`. */
  function fromDocument(where: string, node: unknown, found: Shown[]): void {
    if (Array.isArray(node)) {
      for (const item of node) fromDocument(where, item, found);
      return;
    }
    if (node === null || typeof node !== 'object') return;
    const entries = Object.entries(node as Record<string, unknown>);
    const { name, value } = node as { name?: unknown; value?: unknown };
    if (typeof name === 'string' && NAMES.includes(name) && typeof value === 'string')
      found.push({ where, name, value });
    for (const [key, child] of entries) {
      if (NAMES.includes(key) && typeof child === 'string') found.push({ where, name: key, value: child });
      else fromDocument(where, child, found);
    }
  }

  /** `NAME=value` (and, in example files, `NAME: value`) in any text, comments included. */
  function fromText(where: string, text: string, separators: string, names: readonly string[], found: Shown[]) {
    const pattern = new RegExp(
      `(?<![{$\\w])(${names.join('|')})\\s*[${separators}]\\s*(?:"([^"]*)"|'([^']*)'|(\\$\\{[^}]*\\}|[^\\s'"\`,;]+))`,
      'g',
    );
    for (const match of text.matchAll(pattern)) {
      found.push({ where, name: match[1]!, value: match[2] ?? match[3] ?? match[4]! });
    }
  }

  function shownSecrets(): Shown[] {
    const found: Shown[] = [];
    const examples = [
      ...filesUnder('deploy'),
      ...filesUnder('examples'),
      ...readdirSync(ROOT).filter((file) => /^\.env|\.env\.example$/.test(file)),
    ];
    for (const file of examples) {
      const text = readFileSync(path.join(ROOT, file), 'utf8');
      if (/\.ya?ml$/.test(file)) for (const doc of parseAllDocuments(text)) fromDocument(file, doc.toJS(), found);
      if (file.endsWith('.json')) fromDocument(file, JSON.parse(text), found);
      // In a source file `NAME:` is a schema's key, not a value: only its `NAME=value` lines.
      fromText(file, text, file.endsWith('.ts') ? '=' : ':=', NAMES, found);
    }
    // The docs' shell lines. Their URLs name the development stack on the loopback, not a secret.
    for (const file of [...filesUnder('docs').filter((doc) => doc.endsWith('.md')), 'README.md']) {
      fromText(file, readFileSync(path.join(ROOT, file), 'utf8'), '=', SECRET_SETTINGS, found);
    }
    return found;
  }

  it('every secret value shown is one production refuses: an example added later cannot slip past', () => {
    const shown = shownSecrets();
    const secrets = shown
      .map(({ where, name, value }) => ({
        where: `${where}: ${name}`,
        secret: (CREDENTIAL_URL_SETTINGS as readonly string[]).includes(name) ? urlPassword(value) : value,
      }))
      // Empty is unset; a URL without a password carries no secret.
      .filter((entry): entry is { where: string; secret: string } => Boolean(entry.secret));
    const passing = secrets.filter(({ secret }) => !isPlaceholderSecret(secret)).map(({ where }) => where);
    assert.deepEqual(passing, [], 'values an example shows that production would run with');
    // The scan reads what it should: the example Secret, compose's variables, the docs' samples.
    const where = new Set(secrets.map((entry) => entry.where));
    for (const expected of [
      'deploy/kubernetes/secret.example.yaml: WEBHOOK_SECRET',
      'deploy/kubernetes/secret.example.yaml: DATABASE_URL',
      'deploy/compose.yaml: WEBHOOK_SECRET',
      'deploy/compose.yaml: DATABASE_URL',
      'docs/downstream.md: DOWNSTREAM_SECRET',
    ]) {
      assert.ok(where.has(expected), `${expected} was read (${[...where].join(', ')})`);
    }
  });
});

describe('who migrates: MIGRATE_ON_START and DATABASE_MIGRATION_URL', () => {
  const base = { DATABASE_URL: 'postgresql://orders@db/orders' };

  it('migrates at start over DATABASE_URL unless told otherwise', () => {
    const config = loadConfig(base);
    assert.equal(config.migrateOnStart, true);
    assert.equal(config.migrationUrl, base.DATABASE_URL);
    for (const off of ['0', 'false'])
      assert.equal(loadConfig({ ...base, MIGRATE_ON_START: off }).migrateOnStart, false);
    assert.throws(() => loadConfig({ ...base, MIGRATE_ON_START: 'no' }), /MIGRATE_ON_START: /);
  });

  it('migrates over DATABASE_MIGRATION_URL when set, and refuses one of the other store', () => {
    const direct = 'postgresql://owner@db-direct/orders';
    assert.equal(loadConfig({ ...base, DATABASE_MIGRATION_URL: direct }).migrationUrl, direct);
    assert.throws(
      () => loadConfig({ ...base, DATABASE_MIGRATION_URL: 'mysql://owner@db/orders' }),
      /DATABASE_MIGRATION_URL: must name the same store as DATABASE_URL/,
    );
    assert.throws(
      () => loadConfig({ ...base, DATABASE_MIGRATION_URL: 'http://db' }),
      /DATABASE_MIGRATION_URL: must be/,
    );
  });
});

// The endpoint DingTalk's Stream opens, read from the endpoint answer: never a plain ws:// after a
// discovery over https://, and so, in production — where DINGTALK_API_BASE_URL is https:// or the
// process does not start — never a plain ws:// at all. Pure logic: the answer is given, not fetched.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import fc from 'fast-check';
import { loadConfig } from '../../../../app/env.js';
import { ConfigError } from '../../../../services/config/environment.js';
import { dingtalk as dingtalkModule } from '../../../../vendors/dingtalk/index.js';
import { StreamConnectFailure, streamTargetOf } from '../../../../vendors/dingtalk/stream.js';
import { vendorConfig } from '../../../../vendors/settings.js';

const TICKET = 'one-time-ticket-0123456789';
const STREAM_ENV = {
  DINGTALK_EVENT_MODE: 'stream',
  DINGTALK_APP_KEY: 'ding-app-key',
  DINGTALK_APP_SECRET: 'ding-app-secret-of-its-own',
  OA_FORM_MAPPING: fileURLToPath(new URL('../../../../examples/oa-form-mapping.json', import.meta.url)),
};

/** The refusal of an endpoint answer; fails when a target is returned. */
function refusalOf(endpoint: string, apiBaseUrl: string): StreamConnectFailure {
  try {
    streamTargetOf({ endpoint, ticket: TICKET }, apiBaseUrl);
  } catch (error) {
    assert.ok(error instanceof StreamConnectFailure, String(error));
    return error;
  }
  return assert.fail(`expected ${endpoint} to be refused after a discovery over ${apiBaseUrl}`);
}

describe("DingTalk Stream's endpoint", () => {
  it('opens wss:// with the ticket, and refuses ws:// after a discovery over https://, naming DINGTALK_API_BASE_URL and not the ticket', () => {
    const target = streamTargetOf(
      { endpoint: 'wss://wss-open-connection.dingtalk.com:443/connect', ticket: TICKET },
      'https://api.dingtalk.com',
    );
    assert.equal(new URL(target.url).protocol, 'wss:');
    assert.equal(new URL(target.url).searchParams.get('ticket'), TICKET);

    const refused = refusalOf('ws://wss-open-connection.dingtalk.com/connect', 'https://api.dingtalk.com');
    assert.match(refused.message, /names a ws:\/\/ URL; discovered over https:\/\/ \(DINGTALK_API_BASE_URL\)/);
    assert.ok(!refused.message.includes(TICKET), refused.message);
  });

  it('opens ws:// only after a discovery over http://, as the tests’ fake DingTalk answers', () => {
    const target = streamTargetOf({ endpoint: 'ws://127.0.0.1:4100/ws/v2', ticket: TICKET }, 'http://127.0.0.1:4100');
    assert.equal(new URL(target.url).protocol, 'ws:');
  });

  it('in production is wss:// whatever the answer: every DINGTALK_API_BASE_URL production takes refuses a ws:// endpoint', () => {
    fc.assert(
      fc.property(
        fc.constantFrom('http', 'https', 'HTTPS', 'HTTP'),
        fc.domain(),
        fc.constantFrom('', '/', ':8443'),
        fc.domain(),
        (scheme, host, rest, endpointHost) => {
          const base = `${scheme}://${host}${rest}`;
          const env = { ...STREAM_ENV, DINGTALK_API_BASE_URL: base };
          let apiBaseUrl: string;
          try {
            const dingtalk = vendorConfig(dingtalkModule, loadConfig({ ...env, NODE_ENV: 'production' }).connectors);
            assert.ok(dingtalk?.stream, 'the Stream is on');
            apiBaseUrl = dingtalk.apiBaseUrl;
          } catch (error) {
            // Refused at start: no endpoint is ever asked for.
            assert.ok(
              error instanceof ConfigError && /DINGTALK_API_BASE_URL: must be an https:\/\//.test(error.message),
            );
            assert.equal(new URL(base).protocol, 'http:');
            return;
          }
          refusalOf(`ws://${endpointHost}/connect`, apiBaseUrl);
          // Outside production an http:// base is taken, and its Stream may be ws://, as the fakes'.
          const outside = vendorConfig(dingtalkModule, loadConfig({ ...env, NODE_ENV: 'test' }).connectors)!.apiBaseUrl;
          if (new URL(outside).protocol === 'http:')
            streamTargetOf({ endpoint: `ws://${endpointHost}/`, ticket: TICKET }, outside);
        },
      ),
    );
  });
});

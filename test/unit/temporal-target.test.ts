import assert from 'node:assert/strict';
import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { ConfigError, loadConfig } from '../../services/config/env.js';
import { temporalTargetFrom } from '../../services/temporal/connection.js';
import { makeThrowawayPki } from '../support/tls-proxy.js';

const pki = makeThrowawayPki();
after(() => rmSync(pki.dir, { recursive: true, force: true }));

function targetProblems(env: Record<string, string>): string[] {
  try {
    temporalTargetFrom(loadConfig({ TEMPORAL_ADDRESS: 'temporal.example.com:7233', ...env }).temporal);
  } catch (error) {
    assert.ok(error instanceof ConfigError, String(error));
    return [...error.problems];
  }
  assert.fail('expected the TLS settings to be refused');
}

describe('Temporal connection settings', () => {
  it('is plaintext by default, as the dev server expects', () => {
    const target = temporalTargetFrom(loadConfig({ TEMPORAL_ADDRESS: '127.0.0.1:7233' }).temporal);
    assert.equal(target.tls, undefined);
    assert.equal(target.apiKey, undefined);
  });

  it('turns TLS on for an API key (Temporal Cloud) and trusts the system roots', () => {
    const target = temporalTargetFrom(
      loadConfig({ TEMPORAL_ADDRESS: 'ns.acct.tmprl.cloud:7233', TEMPORAL_API_KEY: 'secret-key' }).temporal,
    );
    assert.deepEqual(target.tls, {});
    assert.equal(target.apiKey, 'secret-key');
  });

  it('reads the CA, the client certificate pair and the server name for mTLS', () => {
    const target = temporalTargetFrom(
      loadConfig({
        TEMPORAL_ADDRESS: '127.0.0.1:7233',
        TEMPORAL_TLS_CA: pki.caFile,
        TEMPORAL_TLS_CERT: pki.clientCertFile,
        TEMPORAL_TLS_KEY: pki.clientKeyFile,
        TEMPORAL_TLS_SERVER_NAME: 'localhost',
      }).temporal,
    );
    assert.ok(target.tls?.serverRootCACertificate);
    assert.ok(target.tls?.clientCertPair);
    assert.equal(target.tls?.serverNameOverride, 'localhost');
  });

  it('names the variable and the file that cannot be used', () => {
    assert.deepEqual(targetProblems({ TEMPORAL_TLS_CA: join(pki.dir, 'missing.pem') }), [
      `TEMPORAL_TLS_CA: cannot read ${join(pki.dir, 'missing.pem')} (ENOENT)`,
    ]);
    const notPem = join(pki.dir, 'not-a-cert.pem');
    writeFileSync(notPem, 'hello');
    assert.deepEqual(targetProblems({ TEMPORAL_TLS_CA: notPem }), [
      `TEMPORAL_TLS_CA: ${notPem} is not a PEM certificate`,
    ]);
    assert.deepEqual(targetProblems({ TEMPORAL_TLS_CERT: pki.clientCertFile, TEMPORAL_TLS_KEY: pki.clientCertFile }), [
      `TEMPORAL_TLS_KEY: ${pki.clientCertFile} is not a PEM private key`,
    ]);
  });

  it('refuses a key that does not belong to the certificate, and a certificate without its key', () => {
    assert.deepEqual(targetProblems({ TEMPORAL_TLS_CERT: pki.clientCertFile, TEMPORAL_TLS_KEY: pki.serverKeyFile }), [
      `TEMPORAL_TLS_KEY: ${pki.serverKeyFile} is not the private key of TEMPORAL_TLS_CERT ${pki.clientCertFile}`,
    ]);
    assert.throws(
      () => loadConfig({ TEMPORAL_TLS_CERT: pki.clientCertFile }),
      /TEMPORAL_TLS_KEY: required with TEMPORAL_TLS_CERT/,
    );
  });
});

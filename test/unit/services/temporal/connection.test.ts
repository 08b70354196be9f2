import assert from 'node:assert/strict';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { loadConfig } from '../../../../app/env.js';
import { ConfigError } from '../../../../services/config/environment.js';
import {
  defaultConfigFile,
  namesOwnTemporal,
  withoutTemporalCredentials,
  warnOfDeprecatedSettings,
} from '../../../../services/temporal/settings.js';
import { temporalTargetFrom } from '../../../../services/temporal/connection.js';
import { makeThrowawayPki, mtlsProfile } from '../../../../tools/harness/tls-proxy.js';

const pki = makeThrowawayPki();
after(() => rmSync(pki.dir, { recursive: true, force: true }));

const API_KEY = 'api-key-that-must-never-show';

function target(env: Record<string, string>) {
  return temporalTargetFrom(loadConfig(env).temporal);
}

/** The problems start-up reports, from reading the settings or from connecting with them. */
function problemsOf(env: Record<string, string>): string[] {
  try {
    target(env);
  } catch (error) {
    assert.ok(error instanceof ConfigError, String(error));
    return [...error.problems];
  }
  assert.fail('expected the Temporal settings to be refused');
}

const targetProblems = (env: Record<string, string>) =>
  problemsOf({ TEMPORAL_ADDRESS: 'temporal.example.com:7233', ...env });

let files = 0;
/** A TOML file with `text`, in the test's folder. */
function tomlFile(text: string): string {
  const file = join(pki.dir, `temporal-${(files += 1)}.toml`);
  writeFileSync(file, text);
  return file;
}

describe('Temporal connection settings', () => {
  it('is plaintext by default, as the dev server expects', () => {
    const plain = target({ TEMPORAL_ADDRESS: '127.0.0.1:7233' });
    assert.equal(plain.tls, undefined);
    assert.equal(plain.apiKey, undefined);
    assert.equal(plain.metadata, undefined);
    assert.equal(plain.namespace, 'default');
  });

  it('turns TLS on for an API key (Temporal Cloud) and trusts the system roots', () => {
    const cloud = target({ TEMPORAL_ADDRESS: 'ns.acct.tmprl.cloud:7233', TEMPORAL_API_KEY: API_KEY });
    assert.deepEqual(cloud.tls, {});
    assert.equal(cloud.apiKey, API_KEY);
  });

  it('turns TLS on or off with TEMPORAL_TLS, off winning over an API key, and refuses another value', () => {
    assert.deepEqual(target({ TEMPORAL_ADDRESS: 'h.example:7233', TEMPORAL_TLS: 'true' }).tls, {});
    assert.equal(
      target({ TEMPORAL_ADDRESS: 'h.example:7233', TEMPORAL_TLS: 'FALSE', TEMPORAL_API_KEY: API_KEY }).tls,
      undefined,
    );
    assert.match(targetProblems({ TEMPORAL_TLS: 'yes' }).join('\n'), /^TEMPORAL_TLS: must be 1, true, 0 or false/m);
  });

  it('reads the CA, the client certificate pair and the server name from Temporal’s variables', () => {
    const mtls = target({
      TEMPORAL_ADDRESS: '127.0.0.1:7233',
      TEMPORAL_TLS_SERVER_CA_CERT_PATH: pki.caFile,
      TEMPORAL_TLS_CLIENT_CERT_PATH: pki.clientCertFile,
      TEMPORAL_TLS_CLIENT_KEY_PATH: pki.clientKeyFile,
      TEMPORAL_TLS_SERVER_NAME: 'localhost',
    });
    assert.deepEqual(mtls.tls?.serverRootCACertificate, readFileSync(pki.caFile));
    assert.deepEqual(mtls.tls?.clientCertPair?.crt, readFileSync(pki.clientCertFile));
    assert.equal(mtls.tls?.serverNameOverride, 'localhost');
  });

  it('takes inline PEM (`*_DATA`) as it takes files', () => {
    const inline = target({
      TEMPORAL_ADDRESS: '127.0.0.1:7233',
      TEMPORAL_TLS_SERVER_CA_CERT_DATA: readFileSync(pki.caFile, 'utf8'),
      TEMPORAL_TLS_CLIENT_CERT_DATA: readFileSync(pki.clientCertFile, 'utf8'),
      TEMPORAL_TLS_CLIENT_KEY_DATA: readFileSync(pki.clientKeyFile, 'utf8'),
    });
    assert.deepEqual(inline.tls?.serverRootCACertificate, readFileSync(pki.caFile));
    assert.deepEqual(inline.tls?.clientCertPair?.key, readFileSync(pki.clientKeyFile));
  });

  it('names the variable and the file that cannot be used', () => {
    const missing = join(pki.dir, 'missing.pem');
    assert.deepEqual(targetProblems({ TEMPORAL_TLS_SERVER_CA_CERT_PATH: missing }), [
      `TEMPORAL_TLS_SERVER_CA_CERT_PATH: cannot read ${missing} (ENOENT)`,
    ]);
    const notPem = join(pki.dir, 'not-a-cert.pem');
    writeFileSync(notPem, 'hello');
    assert.deepEqual(targetProblems({ TEMPORAL_TLS_SERVER_CA_CERT_PATH: notPem }), [
      `TEMPORAL_TLS_SERVER_CA_CERT_PATH: ${notPem} is not a PEM certificate`,
    ]);
    assert.deepEqual(
      targetProblems({
        TEMPORAL_TLS_CLIENT_CERT_PATH: pki.clientCertFile,
        TEMPORAL_TLS_CLIENT_KEY_PATH: pki.clientCertFile,
      }),
      [`TEMPORAL_TLS_CLIENT_KEY_PATH: ${pki.clientCertFile} is not a PEM private key`],
    );
  });

  it('names inline PEM that is not one without repeating it', () => {
    const keyData = 'not-a-key-but-a-secret-all-the-same';
    const problems = targetProblems({
      TEMPORAL_TLS_CLIENT_CERT_DATA: readFileSync(pki.clientCertFile, 'utf8'),
      TEMPORAL_TLS_CLIENT_KEY_DATA: keyData,
    });
    assert.deepEqual(problems, ['TEMPORAL_TLS_CLIENT_KEY_DATA: the value is not a PEM private key']);
  });

  it('refuses a key that does not belong to the certificate, and a certificate without its key', () => {
    assert.deepEqual(
      targetProblems({
        TEMPORAL_TLS_CLIENT_CERT_PATH: pki.clientCertFile,
        TEMPORAL_TLS_CLIENT_KEY_PATH: pki.serverKeyFile,
      }),
      [
        `TEMPORAL_TLS_CLIENT_KEY_PATH: ${pki.serverKeyFile} is not the private key of TEMPORAL_TLS_CLIENT_CERT_PATH ${pki.clientCertFile}`,
      ],
    );
    assert.deepEqual(targetProblems({ TEMPORAL_TLS_CLIENT_CERT_PATH: pki.clientCertFile }), [
      'TEMPORAL_TLS_CLIENT_KEY_PATH: required with TEMPORAL_TLS_CLIENT_CERT_PATH (mTLS needs the certificate and its key)',
    ]);
    assert.deepEqual(targetProblems({ TEMPORAL_TLS_CLIENT_KEY_DATA: 'x' }), [
      'TEMPORAL_TLS_CLIENT_CERT_PATH: required with TEMPORAL_TLS_CLIENT_KEY_DATA (mTLS needs the certificate and its key)',
    ]);
  });

  it('refuses a PEM given twice, as a path and as data', () => {
    assert.deepEqual(
      targetProblems({ TEMPORAL_TLS_SERVER_CA_CERT_PATH: pki.caFile, TEMPORAL_TLS_SERVER_CA_CERT_DATA: 'x' }),
      [
        'TEMPORAL_TLS_SERVER_CA_CERT_PATH, TEMPORAL_TLS_SERVER_CA_CERT_DATA: both give the server CA certificate; set one',
      ],
    );
  });

  it('refuses host verification turned off, which the SDK cannot do, pointing at the server name instead', () => {
    assert.match(
      targetProblems({ TEMPORAL_TLS_DISABLE_HOST_VERIFICATION: 'true' }).join('\n'),
      /^TEMPORAL_TLS_DISABLE_HOST_VERIFICATION: not supported .* set TEMPORAL_TLS_SERVER_NAME/m,
    );
    assert.equal(
      target({ TEMPORAL_ADDRESS: 'h.example:7233', TEMPORAL_TLS_DISABLE_HOST_VERIFICATION: '0' }).tls,
      undefined,
    );
  });
});

describe('The names read before Temporal’s', () => {
  const old = {
    TEMPORAL_ADDRESS: '127.0.0.1:7233',
    TEMPORAL_TLS_CA: pki.caFile,
    TEMPORAL_TLS_CERT: pki.clientCertFile,
    TEMPORAL_TLS_KEY: pki.clientKeyFile,
    TEMPORAL_TLS_SERVER_NAME: 'localhost',
  };

  it('still connect: TEMPORAL_TLS_CA, _CERT and _KEY stand for the *_PATH variables', () => {
    const mtls = target(old);
    assert.deepEqual(mtls.tls?.serverRootCACertificate, readFileSync(pki.caFile));
    assert.deepEqual(mtls.tls?.clientCertPair?.crt, readFileSync(pki.clientCertFile));
    assert.equal(mtls.tls?.serverNameOverride, 'localhost');
  });

  it('are named in messages as they were set', () => {
    const missing = join(pki.dir, 'missing.pem');
    assert.deepEqual(targetProblems({ TEMPORAL_TLS_CA: missing }), [
      `TEMPORAL_TLS_CA: cannot read ${missing} (ENOENT)`,
    ]);
    assert.deepEqual(targetProblems({ TEMPORAL_TLS_CERT: pki.clientCertFile }), [
      'TEMPORAL_TLS_CLIENT_KEY_PATH: required with TEMPORAL_TLS_CERT (mTLS needs the certificate and its key)',
    ]);
  });

  it('make one warning line that names each new variable', () => {
    const lines: string[] = [];
    warnOfDeprecatedSettings(loadConfig(old).temporal, (line) => lines.push(line));
    assert.equal(lines.length, 1);
    assert.match(
      lines[0] ?? '',
      /TEMPORAL_TLS_CA → TEMPORAL_TLS_SERVER_CA_CERT_PATH, TEMPORAL_TLS_CERT → TEMPORAL_TLS_CLIENT_CERT_PATH, TEMPORAL_TLS_KEY → TEMPORAL_TLS_CLIENT_KEY_PATH/,
    );
    warnOfDeprecatedSettings(loadConfig({ TEMPORAL_TLS_SERVER_CA_CERT_PATH: pki.caFile }).temporal, (line) =>
      lines.push(line),
    );
    assert.equal(lines.length, 1, 'no line without an old name');
  });

  it('may be set beside the new name to the same file, and not to another, nor beside inline data', () => {
    assert.ok(target({ ...old, TEMPORAL_TLS_SERVER_CA_CERT_PATH: pki.caFile }).tls?.serverRootCACertificate);
    assert.deepEqual(
      targetProblems({ TEMPORAL_TLS_CA: pki.caFile, TEMPORAL_TLS_SERVER_CA_CERT_PATH: pki.otherCaFile }),
      [
        'TEMPORAL_TLS_CA, TEMPORAL_TLS_SERVER_CA_CERT_PATH: both set, to different files (TEMPORAL_TLS_CA is the old name of TEMPORAL_TLS_SERVER_CA_CERT_PATH: keep only TEMPORAL_TLS_SERVER_CA_CERT_PATH)',
      ],
    );
    assert.match(
      targetProblems({ TEMPORAL_TLS_KEY: pki.clientKeyFile, TEMPORAL_TLS_CLIENT_KEY_DATA: 'x' }).join('\n'),
      /^TEMPORAL_TLS_KEY, TEMPORAL_TLS_CLIENT_KEY_DATA: both give the client key/m,
    );
  });
});

describe('Profiles (TEMPORAL_CONFIG_FILE, TEMPORAL_PROFILE)', () => {
  const shared = tomlFile(`
[profile.default]
address = "default.example:7233"

[profile.prod]
address = "prod.example:7233"
namespace = "orders.acct"
api_key = "${API_KEY}"

[profile.prod.grpc_meta]
x_team_name = "orders"

${mtlsProfile('mtls', pki, '127.0.0.1:7233')}
${mtlsProfile('inline', pki, '127.0.0.1:7233', { inline: true })}`);

  it('reads the profile "default" of the file, and the one TEMPORAL_PROFILE names', () => {
    assert.equal(target({ TEMPORAL_CONFIG_FILE: shared }).address, 'default.example:7233');
    const prod = target({ TEMPORAL_CONFIG_FILE: shared, TEMPORAL_PROFILE: 'prod' });
    assert.deepEqual(
      { address: prod.address, namespace: prod.namespace, apiKey: prod.apiKey, tls: prod.tls },
      { address: 'prod.example:7233', namespace: 'orders.acct', apiKey: API_KEY, tls: {} },
    );
    assert.deepEqual(loadConfig({ TEMPORAL_CONFIG_FILE: shared, TEMPORAL_PROFILE: 'prod' }).temporal.profile, {
      file: shared,
      name: 'prod',
    });
  });

  it('lets the variables override the profile, key by key', () => {
    const overridden = target({
      TEMPORAL_CONFIG_FILE: shared,
      TEMPORAL_PROFILE: 'prod',
      TEMPORAL_ADDRESS: 'other.example:7233',
      TEMPORAL_NAMESPACE: 'other',
    });
    assert.deepEqual(
      [overridden.address, overridden.namespace, overridden.apiKey],
      ['other.example:7233', 'other', API_KEY],
    );
  });

  it('reads certificate paths and inline PEM from the profile', () => {
    for (const profile of ['mtls', 'inline']) {
      const mtls = target({
        TEMPORAL_CONFIG_FILE: shared,
        TEMPORAL_PROFILE: profile,
        TEMPORAL_ADDRESS: '127.0.0.1:7233',
      });
      assert.deepEqual(mtls.tls?.serverRootCACertificate, readFileSync(pki.caFile), profile);
      assert.deepEqual(mtls.tls?.clientCertPair?.key, readFileSync(pki.clientKeyFile), profile);
    }
  });

  it('sends the profile’s and the variables’ gRPC headers, named as the CLI names them', () => {
    const withHeaders = target({
      TEMPORAL_CONFIG_FILE: shared,
      TEMPORAL_PROFILE: 'prod',
      TEMPORAL_GRPC_META_X_REQUEST_SOURCE_NAME: 'orders-service',
    });
    assert.deepEqual(withHeaders.metadata, { 'x-team-name': 'orders', 'x-request-source-name': 'orders-service' });
    const overridden = target({
      TEMPORAL_CONFIG_FILE: shared,
      TEMPORAL_PROFILE: 'prod',
      TEMPORAL_GRPC_META_X_TEAM_NAME: 'ops',
    });
    assert.deepEqual(overridden.metadata, { 'x-team-name': 'ops' });
  });

  it('refuses a header beside an API key that sends the same, and a value a header cannot carry, without showing it', () => {
    assert.match(
      targetProblems({ TEMPORAL_API_KEY: API_KEY, TEMPORAL_GRPC_META_AUTHORIZATION: 'Bearer other' }).join('\n'),
      /^TEMPORAL_GRPC_META_AUTHORIZATION: an API key is set too/m,
    );
    assert.deepEqual(targetProblems({ TEMPORAL_GRPC_META_X_TOKEN: 'sécret' }), [
      'TEMPORAL_GRPC_META_X_TOKEN: the value must be printable ASCII',
    ]);
  });

  it('stops on a profile that is not in the file, naming the file and the profiles it has', () => {
    assert.deepEqual(targetProblems({ TEMPORAL_CONFIG_FILE: shared, TEMPORAL_PROFILE: 'staging' }), [
      `TEMPORAL_PROFILE: no profile "staging" in ${shared} (it has "default", "prod", "mtls", "inline")`,
    ]);
    const noDefault = tomlFile('[profile.prod]\naddress = "prod.example:7233"\n');
    assert.deepEqual(targetProblems({ TEMPORAL_CONFIG_FILE: noDefault }), [
      `TEMPORAL_CONFIG_FILE: ${noDefault} has no profile "default" (it has "prod"); set TEMPORAL_PROFILE`,
    ]);
  });

  it('stops on a file it cannot read or parse, with the line and never the file’s text', () => {
    const missing = join(pki.dir, 'no-such.toml');
    assert.deepEqual(targetProblems({ TEMPORAL_CONFIG_FILE: missing }), [
      `TEMPORAL_CONFIG_FILE: ${missing}: cannot read the file (ENOENT)`,
    ]);
    const broken = tomlFile(`[profile.default]\nnamespace = ["orders"\napi_key = "${API_KEY}"\n`);
    const problems = targetProblems({ TEMPORAL_CONFIG_FILE: broken });
    assert.match(
      problems.join('\n'),
      new RegExp(`^TEMPORAL_CONFIG_FILE: ${broken}: not valid TOML \\(line 3, column \\d+: `, 'm'),
    );
    assert.doesNotMatch(problems.join('\n'), new RegExp(API_KEY));
  });

  it('stops on a key of the wrong type or one it does not know, naming file, profile and key', () => {
    const wrong = tomlFile(`
[profile.default]
address = 7233
tls = "on"
[profile.typo]
adress = "h.example:7233"
[profile.typo.tls]
disabled = "no"
`);
    assert.deepEqual(targetProblems({ TEMPORAL_CONFIG_FILE: wrong }), [
      `TEMPORAL_CONFIG_FILE: ${wrong}, profile "default", address: must be a string`,
      `TEMPORAL_CONFIG_FILE: ${wrong}, profile "default", tls: must be a table`,
    ]);
    assert.deepEqual(targetProblems({ TEMPORAL_CONFIG_FILE: wrong, TEMPORAL_PROFILE: 'typo' }), [
      `TEMPORAL_CONFIG_FILE: ${wrong}, profile "typo", tls.disabled: must be true or false`,
      `TEMPORAL_CONFIG_FILE: ${wrong}, profile "typo", adress: not a key this service knows (a typo, or one it cannot apply)`,
    ]);
  });

  it('names the profile’s key when its certificate cannot be used', () => {
    const missing = join(pki.dir, 'missing-client.pem');
    const badPath = tomlFile(
      `[profile.default.tls]\nclient_cert_path = "${missing}"\nclient_key_path = "${pki.clientKeyFile}"\n`,
    );
    assert.deepEqual(targetProblems({ TEMPORAL_CONFIG_FILE: badPath }), [
      `TEMPORAL_CONFIG_FILE: ${badPath}, profile "default", tls.client_cert_path: cannot read ${missing} (ENOENT)`,
    ]);
    const keyOnly = tomlFile(`[profile.default.tls]\nclient_key_data = "not a key"\n`);
    assert.deepEqual(targetProblems({ TEMPORAL_CONFIG_FILE: keyOnly }), [
      `TEMPORAL_TLS_CLIENT_CERT_PATH (or tls.client_cert_path in the profile): required with tls.client_key_data of profile "default" in ${keyOnly} (mTLS needs the certificate and its key)`,
    ]);
  });

  it('refuses a variable that gives a PEM the profile gives in the other form', () => {
    assert.deepEqual(
      targetProblems({ TEMPORAL_CONFIG_FILE: shared, TEMPORAL_PROFILE: 'mtls', TEMPORAL_TLS_CLIENT_CERT_DATA: 'x' }),
      [
        `TEMPORAL_TLS_CLIENT_CERT_DATA: the client certificate is also given by tls.client_cert_path of profile "mtls" in ${shared}; set one`,
      ],
    );
  });

  it('reads no profile file unless TEMPORAL_CONFIG_FILE or TEMPORAL_PROFILE says so, whatever the home folder holds', () => {
    const home = join(pki.dir, 'home');
    mkdirSync(join(home, '.config', 'temporalio'), { recursive: true });
    writeFileSync(
      join(home, '.config', 'temporalio', 'temporal.toml'),
      `[profile.default]\naddress = "cloud.example:7233"\napi_key = "${API_KEY}"\n`,
    );
    const unasked = loadConfig({ HOME: home }).temporal;
    assert.deepEqual([unasked.address, unasked.apiKey, unasked.profile], [undefined, undefined, undefined]);
    const asked = loadConfig({ HOME: home, TEMPORAL_PROFILE: 'default' }).temporal;
    assert.deepEqual([asked.address, asked.apiKey], ['cloud.example:7233', API_KEY]);
    assert.deepEqual(problemsOf({ TEMPORAL_PROFILE: 'default' }), [
      'TEMPORAL_PROFILE: no home folder to find temporalio/temporal.toml in; set TEMPORAL_CONFIG_FILE',
    ]);
  });

  it('finds the default file where the CLI keeps it on each platform', () => {
    assert.equal(defaultConfigFile({ HOME: '/home/a' }, 'linux'), '/home/a/.config/temporalio/temporal.toml');
    assert.equal(
      defaultConfigFile({ HOME: '/home/a', XDG_CONFIG_HOME: '/etc/xdg' }, 'linux'),
      '/etc/xdg/temporalio/temporal.toml',
    );
    assert.equal(
      defaultConfigFile({ HOME: '/Users/a' }, 'darwin'),
      '/Users/a/Library/Application Support/temporalio/temporal.toml',
    );
    assert.equal(defaultConfigFile({}, 'linux'), undefined);
  });
});

describe('What takes a process off the dev stack’s Temporal', () => {
  it('is an address, a profile or a profile file; not TLS settings or a key on their own', () => {
    for (const name of ['TEMPORAL_ADDRESS', 'TEMPORAL_PROFILE', 'TEMPORAL_CONFIG_FILE']) {
      assert.equal(namesOwnTemporal({ [name]: 'x' }), true, name);
    }
    assert.equal(namesOwnTemporal({ TEMPORAL_API_KEY: API_KEY, TEMPORAL_TLS: '1', HOME: '/home/a' }), false);
  });

  it('leaves the dev server none of the shell’s TLS settings, credentials or headers', () => {
    assert.deepEqual(
      Object.keys(
        withoutTemporalCredentials({
          TEMPORAL_ADDRESS: 'h:1',
          TEMPORAL_NAMESPACE: 'n',
          TEMPORAL_TASK_QUEUE: 'q',
          TEMPORAL_API_KEY: API_KEY,
          TEMPORAL_TLS_CLIENT_CERT_PATH: '/c',
          TEMPORAL_TLS_CA: '/ca',
          TEMPORAL_PROFILE: 'prod',
          TEMPORAL_GRPC_META_X_A: 'b',
          TEMPORAL_TLS: '',
          HOME: '/home/a',
        }),
      ).sort(),
      [
        'TEMPORAL_API_KEY',
        'TEMPORAL_GRPC_META_X_A',
        'TEMPORAL_PROFILE',
        'TEMPORAL_TLS_CA',
        'TEMPORAL_TLS_CLIENT_CERT_PATH',
      ],
    );
  });
});

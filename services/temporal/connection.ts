// Client connections to Temporal, from the one typed config: address, namespace, TLS / mTLS and API
// key, the same for the API, the worker and every tool. The API connects lazily: it starts, and
// answers 503, while Temporal is down.
import { createPrivateKey, X509Certificate } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { isIP } from 'node:net';
import { connect as connectTls } from 'node:tls';
import { Client, Connection, type TLSConfig } from '@temporalio/client';
import type { NativeConnection } from '@temporalio/worker';
import { ConfigError, type TemporalConfig } from '../config/env.js';
import { requireSetting } from '../config/process.js';
import { tracingClientInterceptors } from '../telemetry/tracing.js';

export interface TemporalTarget {
  address: string;
  namespace: string;
  /** Undefined: plaintext; `{}` would mean TLS with the system's trusted roots. */
  tls?: TLSConfig | undefined;
  apiKey?: string | undefined;
}

/**
 * The connection target for the configured cluster. Certificate files are read and checked here,
 * at start, so a wrong path or a key that does not belong to its certificate stops the process
 * with the variable's name instead of failing later as an opaque handshake error.
 */
export function temporalTargetFrom(config: TemporalConfig): TemporalTarget {
  const address = requireSetting('TEMPORAL_ADDRESS', config.address);
  const { tls, apiKey } = config;
  if (!tls) return { address, namespace: config.namespace, ...(apiKey ? { tls: {}, apiKey } : {}) };
  const problems: string[] = [];
  const ca = tls.caFile ? readCertificate('TEMPORAL_TLS_CA', tls.caFile, problems) : undefined;
  const crt = tls.certFile ? readCertificate('TEMPORAL_TLS_CERT', tls.certFile, problems) : undefined;
  const key = tls.keyFile ? readPrivateKey('TEMPORAL_TLS_KEY', tls.keyFile, problems) : undefined;
  if (crt && key && !new X509Certificate(crt).checkPrivateKey(createPrivateKey(key))) {
    problems.push(`TEMPORAL_TLS_KEY: ${tls.keyFile} is not the private key of TEMPORAL_TLS_CERT ${tls.certFile}`);
  }
  if (problems.length > 0) throw new ConfigError(problems);
  return {
    address,
    namespace: config.namespace,
    tls: {
      ...(ca ? { serverRootCACertificate: ca } : {}),
      ...(crt && key ? { clientCertPair: { crt, key } } : {}),
      ...(tls.serverName ? { serverNameOverride: tls.serverName } : {}),
    },
    ...(apiKey ? { apiKey } : {}),
  };
}

function readPem(variable: string, file: string, problems: string[]): Buffer | undefined {
  try {
    return readFileSync(file);
  } catch (error) {
    problems.push(`${variable}: cannot read ${file} (${(error as NodeJS.ErrnoException).code ?? String(error)})`);
    return undefined;
  }
}

function readCertificate(variable: string, file: string, problems: string[]): Buffer | undefined {
  const pem = readPem(variable, file, problems);
  if (!pem) return undefined;
  try {
    new X509Certificate(pem);
    return pem;
  } catch {
    problems.push(`${variable}: ${file} is not a PEM certificate`);
    return undefined;
  }
}

function readPrivateKey(variable: string, file: string, problems: string[]): Buffer | undefined {
  const pem = readPem(variable, file, problems);
  if (!pem) return undefined;
  try {
    createPrivateKey(pem);
    return pem;
  } catch {
    problems.push(`${variable}: ${file} is not a PEM private key`);
    return undefined;
  }
}

const HTTP2_PREFACE_AND_SETTINGS = Buffer.concat([
  Buffer.from('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n'),
  Buffer.from([0, 0, 0, 4, 0, 0, 0, 0, 0]), // an empty SETTINGS frame
]);
const UNTRUSTED_SERVER_CODES = new Set([
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
  'UNABLE_TO_GET_ISSUER_CERT',
  'UNABLE_TO_GET_ISSUER_CERT_LOCALLY',
  'SELF_SIGNED_CERT_IN_CHAIN',
  'DEPTH_ZERO_SELF_SIGNED_CERT',
  'CERT_HAS_EXPIRED',
  'CERT_NOT_YET_VALID',
  'CERT_SIGNATURE_FAILURE',
]);

/**
 * Opens one TLS connection the way gRPC will (HTTP/2 over TLS) and turns a refused handshake into
 * a start-up error that names the setting to fix. The gRPC clients would only report "failed to
 * connect before the deadline" after seconds; this answers in milliseconds. An unreachable server
 * is not a TLS problem: the caller's own connect handles it (the API starts and answers 503).
 */
export async function checkTlsHandshake(target: TemporalTarget, timeoutMs = 5_000): Promise<void> {
  if (!target.tls) return;
  const { serverRootCACertificate: ca, clientCertPair, serverNameOverride } = target.tls;
  const host = target.address.slice(0, target.address.lastIndexOf(':')).replace(/^\[|\]$/g, '');
  const serverName = serverNameOverride ?? (isIP(host) ? undefined : host);
  const failure = await new Promise<{ code: string; message: string } | undefined>((resolve) => {
    const socket = connectTls({
      host,
      port: Number(target.address.slice(target.address.lastIndexOf(':') + 1)),
      ALPNProtocols: ['h2'],
      // Without a configured CA the server is checked against the system's trust store by the real
      // connection, which Node's bundled roots may not match: the preflight then judges only the
      // client side of the handshake.
      ...(ca ? { ca: Buffer.from(ca) } : { rejectUnauthorized: false }),
      ...(clientCertPair ? { cert: Buffer.from(clientCertPair.crt), key: Buffer.from(clientCertPair.key) } : {}),
      ...(serverName ? { servername: serverName } : {}),
    });
    const finish = (result: { code: string; message: string } | undefined) => {
      clearTimeout(timer);
      socket.removeAllListeners();
      socket.on('error', () => undefined);
      socket.destroy();
      resolve(result);
    };
    const timer = setTimeout(() => finish(undefined), timeoutMs);
    // TLS 1.3 servers check the client certificate after the handshake: only the server's first
    // HTTP/2 frame (its SETTINGS, sent in answer to our preface) proves the certificate was accepted.
    socket.once('secureConnect', () => socket.write(HTTP2_PREFACE_AND_SETTINGS));
    socket.once('data', () => finish(undefined));
    socket.once('error', (error: NodeJS.ErrnoException) =>
      finish({ code: error.code ?? 'UNKNOWN', message: readableTlsMessage(error.message) }),
    );
    socket.once('close', () => finish(undefined));
  });
  // Only a TLS verdict stops the process: a certificate refused, untrusted or for another name.
  // A reset or close without an alert is what a TLS terminator does when Temporal behind it is
  // down — an outage, not a setting to fix: the real connection reports it (the API answers 503).
  if (!failure || !isTlsVerdict(failure.code)) return;
  throw new ConfigError([tlsProblem(target.address, failure)]);
}

function isTlsVerdict(code: string): boolean {
  return UNTRUSTED_SERVER_CODES.has(code) || code === 'ERR_TLS_CERT_ALTNAME_INVALID' || code.startsWith('ERR_SSL_');
}

/** OpenSSL's messages carry addresses and source paths; keep the reason ("tlsv13 alert certificate required"). */
function readableTlsMessage(message: string): string {
  return /SSL routines:[^:]*:([^:]+)/.exec(message)?.[1] ?? message.split('\n')[0] ?? message;
}

function tlsProblem(address: string, failure: { code: string; message: string }): string {
  const cause = `${failure.message} [${failure.code}]`;
  if (UNTRUSTED_SERVER_CODES.has(failure.code)) {
    return `TEMPORAL_TLS_CA: the certificate of ${address} is not trusted by TEMPORAL_TLS_CA: ${cause}`;
  }
  if (failure.code === 'ERR_TLS_CERT_ALTNAME_INVALID') {
    return `TEMPORAL_TLS_SERVER_NAME: the certificate of ${address} is not issued for the name checked: ${cause}`;
  }
  if (/WRONG_VERSION_NUMBER|PACKET_LENGTH_TOO_LONG/.test(failure.code)) {
    return `TEMPORAL_TLS_CA: ${address} does not speak TLS (a dev server?): unset the TEMPORAL_TLS_* variables or fix TEMPORAL_ADDRESS: ${cause}`;
  }
  if (/ALERT/.test(failure.code)) {
    return `TEMPORAL_TLS_CERT: ${address} refused the client certificate (missing, or not signed by a CA it trusts): ${cause}`;
  }
  return `TEMPORAL_TLS_CA: no TLS connection to ${address}: ${cause}`;
}

function connectionOptions(target: TemporalTarget) {
  return {
    address: target.address,
    ...(target.tls ? { tls: target.tls } : {}),
    ...(target.apiKey ? { apiKey: target.apiKey } : {}),
  };
}

/**
 * gRPC waits longer and longer between reconnection attempts to a server that went away (1 s, then
 * ×1.6 up to two minutes): after an outage of a minute the API would answer 503 for another twenty
 * seconds with Temporal already back. Capped, it is back within a couple of seconds of Temporal.
 */
const RECONNECT = { channelArgs: { 'grpc.max_reconnect_backoff_ms': 2_000 } };

export function createLazyClient(target: TemporalTarget): Client {
  const connection = Connection.lazy({ ...connectionOptions(target), ...RECONNECT, connectTimeout: '3 seconds' });
  return clientOn(connection, target.namespace);
}

export async function connectClient(target: TemporalTarget): Promise<Client> {
  await checkTlsHandshake(target);
  const connection = await Connection.connect({
    ...connectionOptions(target),
    ...RECONNECT,
    connectTimeout: '5 seconds',
  });
  return clientOn(connection, target.namespace);
}

/**
 * Every client of the service is built here: with tracing on, its starts and signals carry the
 * caller's trace into the workflow (installTracing must have run before).
 */
export function clientOn(connection: Connection | NativeConnection, namespace: string): Client {
  const interceptors = tracingClientInterceptors();
  return new Client({ connection, namespace, ...(interceptors ? { interceptors } : {}) });
}

// Whether a Temporal call failed for want of a server is the classification table's call, like
// every other failure's meaning (docs/architecture.md, decision 15).
export { isTemporalUnreachable } from '../../domain/error-classification.js';

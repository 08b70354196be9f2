// Client connections to Temporal, from the one typed config: address, namespace, TLS / mTLS, API
// key and gRPC headers, the same for the API, the worker and every tool. The API connects lazily:
// it starts, and answers 503, while Temporal is down.
import { createPrivateKey, X509Certificate } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { isIP } from 'node:net';
import { connect as connectTls } from 'node:tls';
import { Client, Connection, type TLSConfig } from '@temporalio/client';
import type { NativeConnection } from '@temporalio/worker';
import { ConfigError } from '../config/environment.js';
import { requireSetting } from '../config/process.js';
import type { PemSource, TemporalConnectionConfig } from './settings.js';
import { tracingClientInterceptors } from '../telemetry/tracing.js';

export interface TemporalTarget {
  address: string;
  namespace: string;
  /** Undefined: plaintext; `{}` would mean TLS with the system's trusted roots. */
  tls?: TLSConfig | undefined;
  apiKey?: string | undefined;
  /** gRPC headers sent with every call (values may be credentials: never logged). */
  metadata?: Record<string, string> | undefined;
  /** The settings a refused handshake names, as the process was given them. */
  tlsSettings?: TlsSettingNames | undefined;
}

/** Which setting to fix for each kind of refused handshake. */
export interface TlsSettingNames {
  serverCaCert: string;
  clientCert: string;
  serverName: string;
}

/** For a setting that is not set: the variable that would set it. */
const DEFAULT_TLS_SETTINGS: TlsSettingNames = {
  serverCaCert: 'TEMPORAL_TLS_SERVER_CA_CERT_PATH',
  clientCert: 'TEMPORAL_TLS_CLIENT_CERT_PATH',
  serverName: 'TEMPORAL_TLS_SERVER_NAME',
};

/**
 * The connection target for the configured cluster. Certificates are read and checked here, at
 * start, so a wrong path, something that is not PEM, or a key that does not belong to its
 * certificate stops the process naming the setting (a variable, or a profile's key) instead of
 * failing later as an opaque handshake error.
 */
export function temporalTargetFrom(config: TemporalConnectionConfig): TemporalTarget {
  const address = requireSetting(
    'TEMPORAL_ADDRESS',
    config.address,
    'this entry point starts no embedded service; or the address of the profile TEMPORAL_PROFILE names',
  );
  const { tls, apiKey } = config;
  const target: TemporalTarget = {
    address,
    namespace: config.namespace,
    ...(apiKey ? { apiKey } : {}),
    ...(Object.keys(config.grpcMeta).length > 0 ? { metadata: { ...config.grpcMeta } } : {}),
  };
  if (!tls) return target;
  const problems: string[] = [];
  const ca = tls.serverCaCert ? readCertificate(tls.serverCaCert, problems) : undefined;
  const crt = tls.clientCert ? readCertificate(tls.clientCert, problems) : undefined;
  const key = tls.clientKey ? readPrivateKey(tls.clientKey, problems) : undefined;
  if (tls.clientCert && tls.clientKey && crt && key && !belongTogether(crt, key)) {
    const certFile = 'file' in tls.clientCert ? ` ${tls.clientCert.file}` : '';
    problems.push(
      `${tls.clientKey.setting}: ${shown(tls.clientKey)} is not the private key of ${tls.clientCert.name}${certFile}`,
    );
  }
  if (problems.length > 0) throw new ConfigError(problems);
  return {
    ...target,
    tls: {
      ...(ca ? { serverRootCACertificate: ca } : {}),
      ...(crt && key ? { clientCertPair: { crt, key } } : {}),
      ...(tls.serverName ? { serverNameOverride: tls.serverName.name } : {}),
    },
    tlsSettings: {
      serverCaCert: tls.serverCaCert?.setting ?? DEFAULT_TLS_SETTINGS.serverCaCert,
      clientCert: tls.clientCert?.setting ?? DEFAULT_TLS_SETTINGS.clientCert,
      serverName: tls.serverName?.setting ?? DEFAULT_TLS_SETTINGS.serverName,
    },
  };
}

function belongTogether(certificate: Buffer, key: Buffer): boolean {
  return new X509Certificate(certificate).checkPrivateKey(createPrivateKey(key));
}

/** A file by its path; inline PEM never by its content. */
function shown(source: PemSource): string {
  return 'file' in source ? source.file : 'the value';
}

function readPem(source: PemSource, problems: string[]): Buffer | undefined {
  if ('inline' in source) return source.inline;
  try {
    return readFileSync(source.file);
  } catch (error) {
    problems.push(
      `${source.setting}: cannot read ${source.file} (${(error as NodeJS.ErrnoException).code ?? String(error)})`,
    );
    return undefined;
  }
}

function readCertificate(source: PemSource, problems: string[]): Buffer | undefined {
  const pem = readPem(source, problems);
  if (!pem) return undefined;
  try {
    new X509Certificate(pem);
    return pem;
  } catch {
    problems.push(`${source.setting}: ${shown(source)} is not a PEM certificate`);
    return undefined;
  }
}

function readPrivateKey(source: PemSource, problems: string[]): Buffer | undefined {
  const pem = readPem(source, problems);
  if (!pem) return undefined;
  try {
    createPrivateKey(pem);
    return pem;
  } catch {
    problems.push(`${source.setting}: ${shown(source)} is not a PEM private key`);
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
  throw new ConfigError([tlsProblem(target.address, failure, target.tlsSettings ?? DEFAULT_TLS_SETTINGS)]);
}

function isTlsVerdict(code: string): boolean {
  return UNTRUSTED_SERVER_CODES.has(code) || code === 'ERR_TLS_CERT_ALTNAME_INVALID' || code.startsWith('ERR_SSL_');
}

/** OpenSSL's messages carry addresses and source paths; keep the reason ("tlsv13 alert certificate required"). */
function readableTlsMessage(message: string): string {
  return /SSL routines:[^:]*:([^:]+)/.exec(message)?.[1] ?? message.split('\n')[0] ?? message;
}

function tlsProblem(address: string, failure: { code: string; message: string }, names: TlsSettingNames): string {
  const cause = `${failure.message} [${failure.code}]`;
  if (UNTRUSTED_SERVER_CODES.has(failure.code)) {
    return `${names.serverCaCert}: the certificate of ${address} is not trusted by this CA: ${cause}`;
  }
  if (failure.code === 'ERR_TLS_CERT_ALTNAME_INVALID') {
    return `${names.serverName}: the certificate of ${address} is not issued for the name checked: ${cause}`;
  }
  if (/WRONG_VERSION_NUMBER|PACKET_LENGTH_TOO_LONG/.test(failure.code)) {
    return `${names.serverCaCert}: ${address} does not speak TLS (a dev server?): turn TLS off (TEMPORAL_TLS=false, or no TLS settings) or fix the address: ${cause}`;
  }
  if (/ALERT/.test(failure.code)) {
    return `${names.clientCert}: ${address} refused the client certificate (missing, or not signed by a CA it trusts): ${cause}`;
  }
  return `${names.serverCaCert}: no TLS connection to ${address}: ${cause}`;
}

/** What the client's and the worker's connections are given alike. */
export function connectionOptions(target: TemporalTarget) {
  return {
    address: target.address,
    ...(target.tls ? { tls: target.tls } : {}),
    ...(target.apiKey ? { apiKey: target.apiKey } : {}),
    ...(target.metadata ? { metadata: target.metadata } : {}),
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

// Client connections to Temporal, from the one typed config: address, namespace, TLS / mTLS and API
// key, the same for the API, the worker and every tool. The API connects lazily: it starts, and
// answers 503, while Temporal is down.
import { createPrivateKey, X509Certificate } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { Client, Connection, type TLSConfig } from '@temporalio/client';
import { ConfigError, type TemporalConfig } from '../config/env.js';
import { requireSetting } from '../config/process.js';

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

function connectionOptions(target: TemporalTarget) {
  return {
    address: target.address,
    ...(target.tls ? { tls: target.tls } : {}),
    ...(target.apiKey ? { apiKey: target.apiKey } : {}),
  };
}

export function createLazyClient(target: TemporalTarget): Client {
  const connection = Connection.lazy({ ...connectionOptions(target), connectTimeout: '3 seconds' });
  return new Client({ connection, namespace: target.namespace });
}

export async function connectClient(target: TemporalTarget): Promise<Client> {
  const connection = await Connection.connect({ ...connectionOptions(target), connectTimeout: '5 seconds' });
  return new Client({ connection, namespace: target.namespace });
}

/** The error and each of its causes, as `{ code, message }`. */
function* causeChain(error: unknown): Generator<{ code?: unknown; message?: unknown }> {
  const seen = new Set<unknown>();
  for (let current: unknown = error; current && typeof current === 'object' && !seen.has(current); ) {
    seen.add(current);
    yield current;
    current = (current as { cause?: unknown }).cause;
  }
}

const NO_CONNECTION = /Failed to connect|ECONNREFUSED|No connection established/i;
// gRPC names the phase a call died in; these phases all come before anything is sent.
const BEFORE_SENDING = /waiting for (metadata filters|name resolution|LB pick)/i;

/** True when an error from a Temporal call means "could not reach the server" (safe to redeliver). */
export function isTemporalUnreachable(error: unknown): boolean {
  for (const { code, message } of causeChain(error)) {
    // gRPC UNAVAILABLE (14), DEADLINE_EXCEEDED (4), CANCELLED (1) by our own deadline.
    if (code === 14 || code === 4 || code === 1) return true;
    if (typeof message === 'string' && (NO_CONNECTION.test(message) || /deadline/i.test(message))) return true;
  }
  return false;
}

/**
 * True only when the call certainly never reached Temporal (no connection could be made). A
 * deadline or a dropped connection mid-call may come after the server acted: the start may have
 * happened, and the caller must not forget the request.
 */
export function certainlyNotSent(error: unknown): boolean {
  for (const { message } of causeChain(error)) {
    if (typeof message === 'string' && (NO_CONNECTION.test(message) || BEFORE_SENDING.test(message))) return true;
  }
  return false;
}

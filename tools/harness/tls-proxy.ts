// A TLS-terminating proxy in front of the plaintext dev server, with certificates from a throwaway
// CA made on the spot: it stands for a Temporal cluster that requires mTLS. gRPC is HTTP/2, so the
// proxy offers ALPN h2 and pipes the decrypted stream to the dev server unchanged.
import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { createConnection } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createServer, type TLSSocket } from 'node:tls';
import forge from 'node-forge';

interface KeyPair {
  certPem: string;
  keyPem: string;
}

function rsaKeys(): { privateKey: forge.pki.rsa.PrivateKey; publicKey: forge.pki.rsa.PublicKey; keyPem: string } {
  const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const keyPem = privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
  const forgeKey = forge.pki.privateKeyFromPem(keyPem);
  return { privateKey: forgeKey, publicKey: forge.pki.setRsaPublicKey(forgeKey.n, forgeKey.e), keyPem };
}

function certificate(options: {
  commonName: string;
  issuer?: { certPem: string; keyPem: string };
  isCa?: boolean;
  usage?: 'server' | 'client';
}): KeyPair {
  const keys = rsaKeys();
  const cert = forge.pki.createCertificate();
  cert.publicKey = keys.publicKey;
  cert.serialNumber = `01${randomBytes(8).toString('hex')}`;
  cert.validity.notBefore = new Date(Date.now() - 60_000);
  cert.validity.notAfter = new Date(Date.now() + 24 * 3600_000);
  cert.setSubject([{ name: 'commonName', value: options.commonName }]);
  const issuerCert = options.issuer ? forge.pki.certificateFromPem(options.issuer.certPem) : cert;
  cert.setIssuer(issuerCert.subject.attributes);
  const extensions: object[] = [{ name: 'basicConstraints', cA: Boolean(options.isCa) }];
  if (options.isCa) extensions.push({ name: 'keyUsage', keyCertSign: true, cRLSign: true, digitalSignature: true });
  if (options.usage === 'server') {
    extensions.push(
      { name: 'keyUsage', digitalSignature: true, keyEncipherment: true },
      { name: 'extKeyUsage', serverAuth: true },
      {
        name: 'subjectAltName',
        altNames: [
          { type: 2, value: 'localhost' },
          { type: 7, ip: '127.0.0.1' },
        ],
      },
    );
  }
  if (options.usage === 'client') {
    extensions.push(
      { name: 'keyUsage', digitalSignature: true, keyEncipherment: true },
      { name: 'extKeyUsage', clientAuth: true },
    );
  }
  cert.setExtensions(extensions);
  const signingKey = options.issuer ? forge.pki.privateKeyFromPem(options.issuer.keyPem) : keys.privateKey;
  cert.sign(signingKey, forge.md.sha256.create());
  return { certPem: forge.pki.certificateToPem(cert), keyPem: keys.keyPem };
}

/** Files a test points TEMPORAL_TLS_* at. */
export interface ThrowawayPki {
  dir: string;
  caFile: string;
  /** A CA that signed nothing here: trusting it must fail the handshake. */
  otherCaFile: string;
  serverCertFile: string;
  serverKeyFile: string;
  clientCertFile: string;
  clientKeyFile: string;
  pems: { ca: KeyPair; server: KeyPair };
}

export function makeThrowawayPki(): ThrowawayPki {
  const dir = mkdtempSync(join(tmpdir(), 'orders-pki-'));
  const ca = certificate({ commonName: 'orders test CA', isCa: true });
  const otherCa = certificate({ commonName: 'unrelated CA', isCa: true });
  const server = certificate({ commonName: 'localhost', issuer: ca, usage: 'server' });
  const client = certificate({ commonName: 'orders worker', issuer: ca, usage: 'client' });
  const write = (name: string, pem: string) => {
    const file = join(dir, name);
    writeFileSync(file, pem, { mode: 0o600 });
    return file;
  };
  return {
    dir,
    caFile: write('ca.pem', ca.certPem),
    otherCaFile: write('other-ca.pem', otherCa.certPem),
    serverCertFile: write('server.pem', server.certPem),
    serverKeyFile: write('server-key.pem', server.keyPem),
    clientCertFile: write('client.pem', client.certPem),
    clientKeyFile: write('client-key.pem', client.keyPem),
    pems: { ca, server },
  };
}

/**
 * A profile of a `temporal.toml`, as the temporal CLI reads it, that connects to `address` with the
 * client certificate of `pki`: its certificates as file paths, or inline as PEM.
 */
export function mtlsProfile(
  name: string,
  pki: ThrowawayPki,
  address: string,
  options: { inline?: boolean; caFile?: string } = {},
): string {
  // JSON's strings are TOML basic strings: a path or a PEM with its newlines escaped.
  const pem = (key: string, file: string) =>
    options.inline
      ? `${key}_data = ${JSON.stringify(readFileSync(file, 'utf8'))}`
      : `${key}_path = ${JSON.stringify(file)}`;
  return [
    `[profile.${name}]`,
    `address = "${address}"`,
    `[profile.${name}.tls]`,
    pem('server_ca_cert', options.caFile ?? pki.caFile),
    pem('client_cert', pki.clientCertFile),
    pem('client_key', pki.clientKeyFile),
    'server_name = "localhost"',
    '',
  ].join('\n');
}

export interface TlsProxy {
  address: string;
  /** Handshakes refused (no or untrusted client certificate, client distrusting our CA). */
  refusedHandshakes: () => number;
  close: () => Promise<void>;
}

/** Listens with TLS on a free port, requires a client certificate from the CA, forwards to `target`. */
export async function startTlsProxy(pki: ThrowawayPki, target: string): Promise<TlsProxy> {
  const [targetHost, targetPort] = [
    target.slice(0, target.lastIndexOf(':')),
    Number(target.slice(target.lastIndexOf(':') + 1)),
  ];
  let refused = 0;
  const sockets = new Set<TLSSocket>();
  const server = createServer(
    {
      key: pki.pems.server.keyPem,
      cert: pki.pems.server.certPem,
      ca: pki.pems.ca.certPem,
      requestCert: true,
      rejectUnauthorized: true,
      ALPNProtocols: ['h2'],
    },
    (socket) => {
      sockets.add(socket);
      const upstream = createConnection({ host: targetHost, port: targetPort });
      socket.pipe(upstream).pipe(socket);
      const end = () => {
        socket.destroy();
        upstream.destroy();
        sockets.delete(socket);
      };
      socket.on('error', end).on('close', end);
      upstream.on('error', end).on('close', end);
    },
  );
  server.on('tlsClientError', () => {
    refused += 1;
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  return {
    address: `127.0.0.1:${port}`,
    refusedHandshakes: () => refused,
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
}

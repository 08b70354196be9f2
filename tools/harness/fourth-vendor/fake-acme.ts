// Acme's side, for the test that registers it: its open API (tokens for the app's secret, instance
// reads with them; tools/harness/fake-oa-api.ts serves them) and its signed callbacks.
import { randomBytes } from 'node:crypto';
import { type FakeOaApi, startFakeOaApi, type VendorShape } from '../fake-oa-api.js';
import { objectOf } from '../../../vendors/inbound.js';
import { ACME_APPROVAL_EVENT, ACME_SIGNATURE_HEADER, ACME_TIMESTAMP_HEADER, acmeSignature } from './connector.js';

/** An instance as Acme's open API answers it. */
export interface AcmeInstance {
  status: 'pending' | 'approved' | 'rejected' | 'withdrawn';
  approved_at?: string;
  fields: Record<string, string>;
  items: Record<string, string>[];
}

const INSTANCES = '/instances/';

export function startFakeAcme(appSecret: string): Promise<FakeOaApi<AcmeInstance>> {
  const shape: VendorShape = {
    tokenRequest: (method, url, body, issue) => {
      if (method !== 'POST' || url.pathname !== '/token') return undefined;
      if (objectOf(body)?.secret !== appSecret) return { status: 403, body: { error: 'unknown app secret' } };
      const { token, ttlSeconds } = issue();
      return { status: 200, body: { token, expires_in: ttlSeconds } };
    },
    instanceRequest: (method, url, headers) => {
      if (method !== 'GET' || !url.pathname.startsWith(INSTANCES)) return undefined;
      const bearer = headers.authorization?.startsWith('Bearer ') ? headers.authorization.slice(7) : undefined;
      return { token: bearer, instanceId: decodeURIComponent(url.pathname.slice(INSTANCES.length)) };
    },
    instanceAnswer: (instance) => ({ status: 200, body: { instance } }),
    notFound: (instanceId) => ({ status: 404, body: { error: `no instance ${instanceId}` } }),
    tokenInvalid: () => ({ status: 401, body: { error: 'token invalid' } }),
    error: (status) => ({ status, body: { error: 'scripted' } }),
  };
  return startFakeOaApi<AcmeInstance>(shape);
}

/** The request Acme sends when `instanceId` changes to `status`, signed with `signingSecret` now. */
export function acmeCallback(
  signingSecret: string,
  instanceId: string,
  status: AcmeInstance['status'],
  eventId = `evt-${randomBytes(6).toString('hex')}`,
): { headers: Record<string, string>; payload: string } {
  const payload = JSON.stringify({ type: ACME_APPROVAL_EVENT, event_id: eventId, instance_id: instanceId, status });
  const timestamp = String(Math.floor(Date.now() / 1000));
  return {
    headers: {
      'content-type': 'application/json',
      [ACME_TIMESTAMP_HEADER]: timestamp,
      [ACME_SIGNATURE_HEADER]: acmeSignature(signingSecret, timestamp, Buffer.from(payload)),
    },
    payload,
  };
}

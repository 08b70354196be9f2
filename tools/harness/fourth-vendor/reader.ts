// Reads an Acme approval instance through its open API: a token for the app's secret
// (`POST /token`), then `GET /instances/:id` with it as a bearer token, refreshed once when the API
// calls it invalid (401). Any other failure is an OaApiError with the answer's status, which the
// classification table judges (domain/error-classification.ts).
import { OaApiError } from '../../../domain/errors.js';
import type { ApprovalInstance, ApprovalReader } from '../../../vendors/approval-reader.js';
import { textOfValue } from '../../../vendors/form-text.js';
import { objectOf } from '../../../vendors/inbound.js';
import { exchange, type OaAnswer } from '../../../vendors/oa-http.js';
import { createTokenCache, readWithOneRefresh } from '../../../vendors/token-cache.js';
import { acmeStatus } from './status.js';

const fail = (answer: OaAnswer, what: string) =>
  new OaApiError('acme', answer.status, answer.retryAfterMs, `acme ${what}: HTTP ${answer.status} ${answer.snippet}`);

/** A row of text values. */
const textRow = (row: unknown): Record<string, string> =>
  Object.fromEntries(Object.entries(objectOf(row) ?? {}).map(([label, value]) => [label, textOfValue(value)]));

export function createAcmeReader(options: { appSecret: string; baseUrl: string; timeoutMs: number }): ApprovalReader {
  const { baseUrl, timeoutMs } = options;
  const tokens = createTokenCache(async () => {
    const body = { secret: options.appSecret };
    const answer = await exchange('acme', new URL(`${baseUrl}/token`), { method: 'POST', body }, timeoutMs);
    const token = objectOf(answer.json);
    if (answer.status !== 200 || typeof token?.token !== 'string' || typeof token.expires_in !== 'number') {
      throw fail(answer, 'token');
    }
    return { token: token.token, expiresInSeconds: token.expires_in };
  });
  return {
    vendor: 'acme',
    readInstance: (instanceId) =>
      readWithOneRefresh(tokens, async (token) => {
        const url = new URL(`${baseUrl}/instances/${encodeURIComponent(instanceId)}`);
        const headers = { authorization: `Bearer ${token}` };
        const answer = await exchange('acme', url, { method: 'GET', headers }, timeoutMs);
        if (answer.status === 401) return { kind: 'token-invalid', refused: () => fail(answer, 'read') };
        const instance = objectOf(objectOf(answer.json)?.instance);
        if (answer.status !== 200 || !instance) throw fail(answer, 'read');
        const read: ApprovalInstance = {
          vendor: 'acme',
          instanceId,
          status: acmeStatus(instance.status),
          approvedAt: typeof instance.approved_at === 'string' ? instance.approved_at : undefined,
          form: {
            fields: textRow(instance.fields),
            tables: { Items: Array.isArray(instance.items) ? instance.items.map(textRow) : [] },
          },
        };
        return { kind: 'ok', value: read };
      }),
  };
}

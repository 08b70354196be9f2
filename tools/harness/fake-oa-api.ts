// The common part of the fake OA open APIs (fake-feishu.ts, fake-dingtalk.ts, fake-wecom.ts): a
// real HTTP server on 127.0.0.1 that issues access tokens with an expiry, serves the instances a
// test registers, answers each instance read as scripted (an error status, Retry-After, an
// invalid-token answer, a hang), and counts what arrived. Each vendor file says only how its requests and answers look.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { randomUUID } from 'node:crypto';

export type ScriptedReply =
  /** Answer this HTTP status (with Retry-After when given) and the vendor's error body. */
  | { kind: 'status'; status: number; retryAfter?: string }
  /** Answer as the vendor does for an expired or revoked access token, whatever token came. */
  | { kind: 'token-invalid' }
  /** Never answer (the reader's timeout fires). */
  | { kind: 'hang' };

export interface Answer {
  status: number;
  body: unknown;
  headers?: Record<string, string>;
  /** Answer only after this long (what the request did is done at once): a reply that outlives the client's timeout. */
  delayMs?: number;
}

/** What a vendor's other requests may read of a request beyond its body: its headers, and whether a token is one the fake issued. */
export interface RequestContext {
  headers: http.IncomingHttpHeaders;
  /** Whether `token` was issued by this fake and has neither expired nor been revoked. */
  tokenValid(token: string | undefined): boolean;
}

export interface VendorShape {
  /** Whether this request asks for a token; its answer given a fresh token, or an error. */
  tokenRequest(
    method: string,
    url: URL,
    body: unknown,
    issue: () => { token: string; ttlSeconds: number },
  ): Answer | undefined;
  /** The access token of an instance read and the instance id it asks for, or undefined if this is not one. */
  instanceRequest(
    method: string,
    url: URL,
    headers: http.IncomingHttpHeaders,
    body: unknown,
  ): { token: string | undefined; instanceId: string } | undefined;
  instanceAnswer(instance: unknown): Answer;
  /** Any other request the vendor's API answers (Feishu's long-connection discovery and messages), or undefined. */
  otherRequest?(method: string, url: URL, body: unknown, request: RequestContext): Answer | undefined;
  notFound(instanceId: string): Answer;
  tokenInvalid(): Answer;
  error(status: number): Answer;
  /** Any other request the vendor's fake answers (DingTalk's Stream endpoint), or undefined. */
  otherRequest?(method: string, url: URL, body: unknown, request: RequestContext): Answer | undefined;
}

export interface FakeOaApi<Instance> {
  url: string;
  /** The HTTP server, for a vendor's fake that also takes WebSocket upgrades on it. */
  server: http.Server;
  register: (instanceId: string, instance: Instance) => void;
  /** Replies for the next reads of this instance, in order; then the registered instance answers. */
  script: (instanceId: string, replies: ScriptedReply[]) => void;
  /** Replies for the next token requests, in order; then a token is issued. */
  scriptToken: (replies: ScriptedReply[]) => void;
  /** Every token issued so far stops being valid (as when the vendor expires them early). */
  revokeTokens: () => void;
  tokenRequests: () => number;
  /** Every access token issued so far: secrets no output of the service may show. */
  issuedTokens: () => string[];
  reads: (instanceId?: string) => number;
  close: () => Promise<void>;
}

export async function startFakeOaApi<Instance>(
  shape: VendorShape,
  options: { tokenTtlSeconds?: number } = {},
): Promise<FakeOaApi<Instance>> {
  const ttlSeconds = options.tokenTtlSeconds ?? 7_200;
  const instances = new Map<string, Instance>();
  const scripts = new Map<string, ScriptedReply[]>();
  let tokenScript: ScriptedReply[] = [];
  const tokens = new Map<string, number>();
  const issued: string[] = [];
  let tokenRequests = 0;
  const reads: string[] = [];
  const hanging = new Set<http.ServerResponse>();
  const delayed = new Set<NodeJS.Timeout>();

  const send = (response: http.ServerResponse, answer: Answer) => {
    const write = () => {
      if (response.destroyed) return;
      response.writeHead(answer.status, { 'content-type': 'application/json; charset=utf-8', ...answer.headers });
      response.end(JSON.stringify(answer.body));
    };
    if (answer.delayMs === undefined) return write();
    hanging.add(response);
    const timer = setTimeout(() => {
      delayed.delete(timer);
      hanging.delete(response);
      write();
    }, answer.delayMs);
    delayed.add(timer);
  };
  const tokenValid = (token: string | undefined) => {
    const expiresAt = token ? tokens.get(token) : undefined;
    return expiresAt !== undefined && expiresAt > Date.now();
  };
  const scripted = (response: http.ServerResponse, reply: ScriptedReply): void => {
    if (reply.kind === 'hang') {
      hanging.add(response);
      return;
    }
    if (reply.kind === 'token-invalid') return send(response, shape.tokenInvalid());
    const answer = shape.error(reply.status);
    send(response, reply.retryAfter ? { ...answer, headers: { 'retry-after': reply.retryAfter } } : answer);
  };

  const server = http.createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const url = new URL(request.url ?? '/', 'http://127.0.0.1');
      const method = request.method ?? 'GET';
      let body: unknown;
      try {
        body = chunks.length > 0 ? JSON.parse(Buffer.concat(chunks).toString('utf8')) : undefined;
      } catch {
        body = undefined;
      }
      const issue = () => {
        const token = `t-${randomUUID()}`;
        tokens.set(token, Date.now() + ttlSeconds * 1000);
        issued.push(token);
        return { token, ttlSeconds };
      };
      const context: RequestContext = { headers: request.headers, tokenValid };
      const other = shape.otherRequest?.(method, url, body, context);
      if (other) return send(response, other);
      const tokenAnswer = shape.tokenRequest(method, url, body, issue);
      if (tokenAnswer) {
        tokenRequests += 1;
        const reply = tokenScript.shift();
        return reply ? scripted(response, reply) : send(response, tokenAnswer);
      }
      const read = shape.instanceRequest(method, url, request.headers, body);
      if (!read) return send(response, shape.otherRequest?.(method, url, body, context) ?? shape.error(404));
      reads.push(read.instanceId);
      const reply = scripts.get(read.instanceId)?.shift();
      if (reply) return scripted(response, reply);
      if (!tokenValid(read.token)) return send(response, shape.tokenInvalid());
      const instance = instances.get(read.instanceId);
      return send(response, instance === undefined ? shape.notFound(read.instanceId) : shape.instanceAnswer(instance));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    server,
    register: (instanceId, instance) => void instances.set(instanceId, instance),
    script: (instanceId, replies) => void scripts.set(instanceId, [...replies]),
    scriptToken: (replies) => void (tokenScript = [...replies]),
    revokeTokens: () => tokens.clear(),
    tokenRequests: () => tokenRequests,
    issuedTokens: () => [...issued],
    reads: (instanceId) => (instanceId === undefined ? reads.length : reads.filter((id) => id === instanceId).length),
    close: async () => {
      for (const timer of delayed) clearTimeout(timer);
      for (const response of hanging) response.socket?.destroy();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

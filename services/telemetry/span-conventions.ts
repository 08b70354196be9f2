// The names and attributes of our own spans, after OpenTelemetry's HTTP and messaging semantic
// conventions, as plain functions of what the span knows (docs/architecture.md, decision 22). A
// span name is low-cardinality: a route template or a destination, never a URL, whose path and
// query are the caller's (and may hold a token). A URL reaches an attribute only through the one
// redaction (domain-node/redact-url.ts), and a server's address never with its userinfo.
import type { Attributes } from '@opentelemetry/api';
import { redactUrl } from '../../domain-node/redact-url.js';

/** The methods the HTTP conventions name; any other is `_OTHER`, so a caller cannot mint span names. */
const KNOWN_METHODS = new Set(['CONNECT', 'DELETE', 'GET', 'HEAD', 'OPTIONS', 'PATCH', 'POST', 'PUT', 'TRACE']);

/** The port a URL without one means, for the schemes the service talks to. */
const DEFAULT_PORTS: Readonly<Record<string, number>> = { 'http:': 80, 'https:': 443, 'amqp:': 5672, 'amqps:': 5671 };

/**
 * An HTTP span's name: `{method} {route template}`, or the method alone when there is no template
 * (a request no route took, a client request); `HTTP` stands for a method the conventions do not know.
 */
export function httpSpanName(method: string, route?: string): string {
  const named = KNOWN_METHODS.has(method) ? method : 'HTTP';
  return route === undefined ? named : `${named} ${route}`;
}

/** `http.request.method`, with the original beside `_OTHER` for a method the conventions do not know. */
export function httpMethodAttributes(method: string): Attributes {
  return KNOWN_METHODS.has(method)
    ? { 'http.request.method': method }
    : { 'http.request.method': '_OTHER', 'http.request.method_original': method };
}

/** `server.address` and `server.port` of a URL: its host and port, never its userinfo; none when it does not parse. */
export function serverAttributes(url: string): Attributes {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return {};
  }
  // An IPv6 literal is the address without its URL brackets.
  const address = parsed.hostname.replace(/^\[(.*)\]$/, '$1');
  const port = parsed.port === '' ? DEFAULT_PORTS[parsed.protocol] : Number(parsed.port);
  return { 'server.address': address, ...(port !== undefined ? { 'server.port': port } : {}) };
}

/** The attributes an HTTP client span starts with: the method, the server, and `url.full` redacted. */
export function httpClientAttributes(method: string, url: string): Attributes {
  return { ...httpMethodAttributes(method), ...serverAttributes(url), 'url.full': redactUrl(url) };
}

/** A server span's `error.type`: the status of a 5xx answer; a 4xx is the caller's failure, not the server's. */
export function httpServerErrorType(status: number): string | undefined {
  return status >= 500 ? String(status) : undefined;
}

/** The attributes an HTTP server span starts with; `url.query` is not recorded, since it may hold a token. */
export function httpServerAttributes(request: {
  method: string;
  /** The request target as received: path and query. */
  target: string;
  scheme: string;
  /** The matched route's template; undefined when no route took the request. */
  route: string | undefined;
}): Attributes {
  return {
    ...httpMethodAttributes(request.method),
    'url.scheme': request.scheme,
    'url.path': request.target.split('?')[0] ?? '',
    ...(request.route !== undefined ? { 'http.route': request.route } : {}),
  };
}

/** What a broker publish is: the exchange it goes to, with what routing key, on which broker. */
export interface RabbitMqSend {
  exchange: string;
  routingKey: string;
  /** The broker's URL (AMQP_URL): only its host and port reach the span. */
  brokerUrl: string;
}

/** A publish span's name, `{operation name} {destination}`: `send orders`. */
export function messagingSendSpanName(send: RabbitMqSend): string {
  return `send ${send.exchange}`;
}

/** The attributes of a publish span that do not change from message to message. */
export function messagingSendAttributes(send: RabbitMqSend): Attributes {
  return {
    'messaging.system': 'rabbitmq',
    'messaging.operation.name': 'send',
    'messaging.operation.type': 'send',
    'messaging.destination.name': send.exchange,
    'messaging.rabbitmq.destination.routing_key': send.routingKey,
    ...serverAttributes(send.brokerUrl),
  };
}

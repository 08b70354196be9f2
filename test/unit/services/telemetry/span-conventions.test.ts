// The names and attributes of our own spans, as OpenTelemetry's HTTP and messaging conventions ask:
// low-cardinality names, the server's host and port, and no URL's credentials or query values in
// any attribute. (The spans themselves, on the real stack: test/integration/tracing.test.ts.)
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  httpClientAttributes,
  httpMethodAttributes,
  httpServerAttributes,
  httpServerErrorType,
  httpSpanName,
  messagingSendAttributes,
  messagingSendSpanName,
  serverAttributes,
} from '../../../../services/telemetry/span-conventions.js';

describe('HTTP span names and attributes', () => {
  it('names a span by its method and route template, by its method alone without one, and never by an unknown method', () => {
    assert.equal(httpSpanName('POST', '/webhooks/oa/approvals'), 'POST /webhooks/oa/approvals');
    assert.equal(httpSpanName('GET', '/orders/:key'), 'GET /orders/:key');
    assert.equal(httpSpanName('GET'), 'GET');
    assert.equal(httpSpanName('PROPFIND'), 'HTTP');
    assert.equal(httpSpanName('PROPFIND', '/orders/:key'), 'HTTP /orders/:key');
    assert.deepEqual(httpMethodAttributes('POST'), { 'http.request.method': 'POST' });
    assert.deepEqual(httpMethodAttributes('PROPFIND'), {
      'http.request.method': '_OTHER',
      'http.request.method_original': 'PROPFIND',
    });
  });

  it("a client span has the server's host and port and the URL redacted: no userinfo, no query value", () => {
    assert.deepEqual(httpClientAttributes('POST', 'https://erp.example:8443/hooks/orders?code=query-token-123&v=2'), {
      'http.request.method': 'POST',
      'server.address': 'erp.example',
      'server.port': 8443,
      'url.full': 'https://erp.example:8443/hooks/orders?code=REDACTED&v=REDACTED',
    });
    const withUserinfo = httpClientAttributes('POST', 'https://erp-user:erp-password@erp.example/hook');
    assert.equal(withUserinfo['url.full'], 'https://REDACTED:REDACTED@erp.example/hook');
    assert.equal(withUserinfo['server.port'], 443, 'the scheme default when the URL names no port');
    assert.doesNotMatch(JSON.stringify(withUserinfo), /erp-user|erp-password/);
  });

  it('a server span has the path without the query, the route only when one matched, and error.type only for 5xx', () => {
    assert.deepEqual(
      httpServerAttributes({
        method: 'GET',
        target: '/no/such/route?access_token=tok-1',
        scheme: 'http',
        route: undefined,
      }),
      { 'http.request.method': 'GET', 'url.scheme': 'http', 'url.path': '/no/such/route' },
    );
    assert.deepEqual(
      httpServerAttributes({
        method: 'GET',
        target: '/orders/APPROVAL:A-1:MAIN?x=1',
        scheme: 'https',
        route: '/orders/:key',
      }),
      {
        'http.request.method': 'GET',
        'url.scheme': 'https',
        'url.path': '/orders/APPROVAL:A-1:MAIN',
        'http.route': '/orders/:key',
      },
    );
    assert.equal(httpServerErrorType(500), '500');
    assert.equal(httpServerErrorType(503), '503');
    assert.equal(httpServerErrorType(404), undefined);
    assert.equal(httpServerErrorType(202), undefined);
  });

  it('the server of an IPv6 literal is the address without brackets, and a URL that does not parse gives none', () => {
    assert.deepEqual(serverAttributes('http://[::1]:8080/events'), { 'server.address': '::1', 'server.port': 8080 });
    assert.deepEqual(serverAttributes('not a url'), {});
  });
});

describe('the broker publish span', () => {
  it('is `send <exchange>`, with the routing key, and the broker by host and port, never its credentials', () => {
    const send = {
      exchange: 'orders',
      routingKey: 'order.created',
      brokerUrl: 'amqp://orders-user:broker-password@rabbit.internal/orders-vhost',
    };
    assert.equal(messagingSendSpanName(send), 'send orders');
    const attributes = messagingSendAttributes(send);
    assert.deepEqual(attributes, {
      'messaging.system': 'rabbitmq',
      'messaging.operation.name': 'send',
      'messaging.operation.type': 'send',
      'messaging.destination.name': 'orders',
      'messaging.rabbitmq.destination.routing_key': 'order.created',
      'server.address': 'rabbit.internal',
      'server.port': 5672,
    });
    assert.doesNotMatch(JSON.stringify(attributes), /orders-user|broker-password/);
    assert.equal(messagingSendAttributes({ ...send, brokerUrl: 'amqps://u:p@rabbit.internal' })['server.port'], 5671);
  });
});

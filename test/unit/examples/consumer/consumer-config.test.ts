import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { loadBrokerConsumerConfig, loadConsumerConfig } from '../../../../examples/consumer/consumer-config.js';
import { ConfigError } from '../../../../services/config/environment.js';

/** A DOWNSTREAM_SECRET for the consumers, which require one. */
const SIGNING = 'downstream-secret-0123456789';

describe('the RabbitMQ consumer configuration', () => {
  const refusal = (env: Record<string, string>): string => {
    try {
      loadBrokerConsumerConfig(env);
    } catch (error) {
      assert.ok(error instanceof ConfigError);
      return error.problems.join('\n');
    }
    assert.fail('expected the configuration to be refused');
  };

  it('has the documented defaults and takes DATABASE_URL when CONSUMER_DATABASE_URL is unset', () => {
    const config = loadBrokerConsumerConfig({
      AMQP_URL: 'amqp://127.0.0.1',
      DATABASE_URL: 'postgresql://db/x',
      DOWNSTREAM_SECRET: SIGNING,
    });
    assert.deepEqual(config, {
      amqpUrl: 'amqp://127.0.0.1',
      exchange: 'orders',
      name: 'reference',
      prefetch: 10,
      databaseUrl: 'postgresql://db/x',
      schema: 'consumer',
      secrets: { secret: SIGNING },
    });
  });

  it('verifies with DOWNSTREAM_SECRET, which it requires, and DOWNSTREAM_SECRET_PREVIOUS during a rotation', () => {
    const settings = { AMQP_URL: 'amqp://127.0.0.1', DATABASE_URL: 'postgresql://db/x' };
    assert.match(refusal(settings), /^DOWNSTREAM_SECRET: required/);
    assert.match(refusal({ ...settings, DOWNSTREAM_SECRET: 'short' }), /^DOWNSTREAM_SECRET: must be at least 16/);
    const rotating = {
      ...settings,
      DOWNSTREAM_SECRET: SIGNING,
      DOWNSTREAM_SECRET_PREVIOUS: 'the-old-downstream-secret',
    };
    assert.deepEqual(loadBrokerConsumerConfig(rotating).secrets, {
      secret: SIGNING,
      previousSecret: 'the-old-downstream-secret',
    });
    assert.match(
      refusal({ ...settings, DOWNSTREAM_SECRET: SIGNING, DOWNSTREAM_SECRET_PREVIOUS: SIGNING }),
      /^DOWNSTREAM_SECRET_PREVIOUS: equals DOWNSTREAM_SECRET/,
    );
    // The HTTP consumer reads the same two settings the same way.
    assert.deepEqual(loadConsumerConfig(rotating).secrets, loadBrokerConsumerConfig(rotating).secrets);
    assert.throws(() => loadConsumerConfig({ DATABASE_URL: 'postgresql://db/x' }), /DOWNSTREAM_SECRET: required/);
  });

  it('names the variable of a missing or malformed setting', () => {
    assert.match(refusal({ DATABASE_URL: 'postgresql://db/x' }), /^AMQP_URL: required/);
    const bad = refusal({
      AMQP_URL: 'http://broker',
      ORDER_EVENTS_EXCHANGE: 'orders events',
      CONSUMER_NAME: 'a.b',
      CONSUMER_PREFETCH: '0',
      CONSUMER_SCHEMA: 'Consumer',
      DATABASE_URL: 'postgresql://db/x',
    });
    for (const name of ['AMQP_URL', 'ORDER_EVENTS_EXCHANGE', 'CONSUMER_NAME', 'CONSUMER_PREFETCH', 'CONSUMER_SCHEMA']) {
      assert.match(bad, new RegExp(`^${name}: `, 'm'));
    }
    assert.match(refusal({ AMQP_URL: 'amqp://127.0.0.1' }), /^CONSUMER_DATABASE_URL: required/);
  });

  const withDatabase = (env: Record<string, string>) => ({
    DATABASE_URL: 'postgresql://db/x',
    DOWNSTREAM_SECRET: SIGNING,
    ...env,
  });

  it('refuses an AMQP_URL that is no URL, of another scheme, or without a host', () => {
    assert.match(refusal(withDatabase({ AMQP_URL: 'broker:5672' })), /^AMQP_URL: must be an amqp:\/\/ or amqps:\/\//);
    assert.match(refusal(withDatabase({ AMQP_URL: 'not a url' })), /^AMQP_URL: is not a URL/);
    assert.match(refusal(withDatabase({ AMQP_URL: 'http://broker' })), /^AMQP_URL: must be an amqp:/);
    for (const hostless of ['amqp://', 'amqp:///vhost', 'amqps:?heartbeat=5']) {
      assert.match(refusal(withDatabase({ AMQP_URL: hostless })), /^AMQP_URL: names no host/, hostless);
    }
    assert.equal(
      loadBrokerConsumerConfig(withDatabase({ AMQP_URL: 'amqps://u:p@mq.example:5671/v' })).amqpUrl,
      'amqps://u:p@mq.example:5671/v',
    );
  });

  it("holds ORDER_EVENTS_EXCHANGE to the service's rule, and the names derived from it to 255 bytes", () => {
    const amqp = { AMQP_URL: 'amqp://127.0.0.1' };
    assert.match(
      refusal(withDatabase({ ...amqp, ORDER_EVENTS_EXCHANGE: 'amq.topic' })),
      /^ORDER_EVENTS_EXCHANGE: names starting with "amq\." belong to the broker/,
    );
    // 255 bytes is a valid exchange name, but `<exchange>.order-created.<name>.dead-letter` is not.
    const longest = 255 - '.order-created.reference.dead-letter'.length;
    const fits = loadBrokerConsumerConfig(withDatabase({ ...amqp, ORDER_EVENTS_EXCHANGE: 'x'.repeat(longest) }));
    assert.equal(fits.exchange.length, longest);
    const tooLong = refusal(withDatabase({ ...amqp, ORDER_EVENTS_EXCHANGE: 'x'.repeat(longest + 1) }));
    assert.match(tooLong, /^ORDER_EVENTS_EXCHANGE: too long with CONSUMER_NAME "reference": .* has 256 bytes/);
    // A longer consumer name shortens the exchange names that fit.
    assert.match(
      refusal(withDatabase({ ...amqp, ORDER_EVENTS_EXCHANGE: 'x'.repeat(longest), CONSUMER_NAME: 'reference2' })),
      /^ORDER_EVENTS_EXCHANGE: too long with CONSUMER_NAME "reference2"/,
    );
  });
});

// The RabbitMQ the broker tests use: the one at AMQP_URL, by default the machine's own broker with
// its guest user. A suite that cannot reach it fails every one of its tests with a message that
// says how to provide one — never a skip, and never a failed hook that the summary would count as
// "cancelled" rather than failed.
import { before, beforeEach } from 'node:test';
import { connect, type ChannelModel } from 'amqplib';
import { redactUrl } from '../../domain-node/redact-url.js';

export const AMQP_URL = process.env.AMQP_URL || 'amqp://guest:guest@127.0.0.1:5672';

/** The URL without its credentials, for messages. */
export function redactedAmqpUrl(url: string = AMQP_URL): string {
  return redactUrl(url);
}

export interface SuiteBroker {
  /** The suite's connection; throws the reason when the broker could not be reached. */
  connection(): ChannelModel;
  /** False when the broker could not be reached: the suite's own hooks then do nothing. */
  reachable(): boolean;
}

/**
 * Connects once for the enclosing `describe` (call it there, before the suite's own hooks). The
 * suite closes the connection in its `after`, once its own cleanup used it.
 */
export function brokerForSuite(): SuiteBroker {
  let connection: ChannelModel | undefined;
  let unreachable: Error | undefined;
  before(async () => {
    try {
      connection = await connect(AMQP_URL);
    } catch (error) {
      unreachable = new Error(
        `RabbitMQ is not reachable at ${redactedAmqpUrl()} (${(error as Error).message}). These tests need a ` +
          'running RabbitMQ: on Debian `apt-get install rabbitmq-server` serves 127.0.0.1:5672 with the guest ' +
          'user; elsewhere set AMQP_URL=amqp://user:password@host:5672.',
      );
    }
  });
  beforeEach(() => {
    if (unreachable) throw unreachable;
  });
  return {
    connection: () => {
      if (!connection) throw unreachable ?? new Error('the suite has not connected to RabbitMQ yet');
      return connection;
    },
    reachable: () => connection !== undefined,
  };
}

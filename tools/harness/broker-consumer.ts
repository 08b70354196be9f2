// What the broker tests share about the reference RabbitMQ consumer: its JSON log lines read back
// from its output, and removing the exchanges and queues a test declared for it.
import type { Channel } from 'amqplib';
import type { BrokerTopology } from '../../examples/consumer/broker-consumer.js';

export interface ConsumerLogLine {
  msg?: string;
  idempotencyKey?: string;
  messageId?: string;
  redelivered?: boolean;
  redeliveries?: number;
}

/**
 * What the consumer did with each delivery (`event applied`, `duplicate event ignored`, …), its
 * messageId and whether the broker marked it redelivered. A process killed mid-write can leave a
 * torn line; it is skipped.
 */
export function consumerLogLines(output: string): ConsumerLogLine[] {
  return output.split('\n').flatMap((line) => {
    if (!line.startsWith('{')) return [];
    try {
      return [JSON.parse(line) as ConsumerLogLine];
    } catch {
      return [];
    }
  });
}

/** Deletes what `declareTopology` declared: both queues (with what they hold) and both exchanges. */
export async function deleteTopology(channel: Channel, topology: BrokerTopology): Promise<void> {
  await channel.deleteQueue(topology.queue);
  await channel.deleteQueue(topology.deadLetterQueue);
  await channel.deleteExchange(topology.exchange);
  await channel.deleteExchange(topology.deadLetterExchange);
}

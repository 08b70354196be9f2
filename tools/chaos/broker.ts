// The broker side of the chaos run: RabbitMQ at AMQP_URL (the machine's own by default), one
// exchange of its own per run, the worker's publishes through a TCP proxy that cuts them
// mid-flight, and the reference consumer as a process the harness SIGKILLs between its commit and
// its ack. What the consumer did with each delivery is read from its own log lines.
import { connect, type ChannelModel } from 'amqplib';
import { brokerTopology, type BrokerTopology } from '../../examples/consumer/broker-consumer.js';
import { managedProcess, type ManagedProcess } from '../harness/child-process.js';
import { startTcpProxy, type TcpProxy } from '../harness/tcp-proxy.js';
import { sleep } from '../harness/time.js';
import { redactUrl } from '../../domain-node/redact-url.js';

export const DEFAULT_AMQP_URL = 'amqp://guest:guest@127.0.0.1:5672';
/** The line the harness's consumer logs when it committed a message and holds back its ack. */
export const ACK_HELD_LINE = 'committed, ack held until killed';
/** A publish's bytes carry its routing key: the proxy recognises the publish to lose by it. */
const PUBLISH_MARK = 'order.created';
const CONSUMER_SCHEMA = 'chaos_broker_consumer';

// A password holding `/` or `@` must not slip past a pattern: the one URL redaction decides.
const redact = redactUrl;

/** What the consumer logged about each delivery, over all of its runs. */
export interface ConsumerDeliveries {
  applied: number;
  /** Deliveries flagged `redelivered` (an earlier delivery was not acked) that changed nothing. */
  redeliveriesAbsorbed: number;
  /** Fresh deliveries of an event already applied: a second publish of the same messageId. */
  republishesAbsorbed: number;
  /** Distinct message ids delivered more than once, by redelivery or by a second publish. */
  messageIdsDeliveredAgain: number;
}

export interface ChaosBroker {
  exchange: string;
  topology: BrokerTopology;
  /** AMQP_URL for the worker: the broker through the fault proxy. */
  workerUrl: string;
  counts: { consumerKillsBeforeAck: number; publishCuts: number };
  startConsumer: (databaseUrl: string, env: NodeJS.ProcessEnv) => Promise<void>;
  /** SIGKILLs the consumer once it holds a committed, unacked message, then starts it again. */
  killConsumerBeforeAck: (pauseMs: number, log: (message: string) => void) => Promise<void>;
  /** Lets one publish reach the broker, loses its confirm, and cuts every worker connection. */
  cutDuringPublish: (log: (message: string) => void) => Promise<void>;
  /** Ready messages still waiting in the consumer's queue. */
  queued: () => Promise<number>;
  deliveries: () => ConsumerDeliveries;
  /** Whether the consumer runs, or how it ended, and its last `lines` lines of output: what a run that did not catch up shows. */
  consumerState: (lines: number) => string;
  consumerSchema: string;
  close: () => Promise<void>;
}

/**
 * Connects to the broker the run needs, or throws an error that says how to provide one: a run
 * without a broker would prove nothing about it.
 */
export async function openChaosBroker(url: string, seed: number): Promise<ChaosBroker> {
  let target: URL;
  try {
    target = new URL(url);
  } catch {
    throw new Error('AMQP_URL is not a URL: set it to amqp://user:password@host:5672');
  }
  if (target.protocol !== 'amqp:')
    throw new Error('AMQP_URL must be an amqp:// URL (not amqps://: the fault proxy cannot cut into TLS)');
  let admin: ChannelModel;
  try {
    admin = await connect(url, { timeout: 10_000 });
  } catch (error) {
    throw new Error(
      `RabbitMQ is not reachable at ${redact(url)} (${(error as Error).message}). The chaos run publishes ` +
        'order.created to a broker: on Debian `apt-get install rabbitmq-server` serves 127.0.0.1:5672 with the ' +
        'guest user; elsewhere set AMQP_URL=amqp://user:password@host:5672.',
    );
  }
  admin.on('error', () => undefined);
  const channel = await admin.createChannel();
  // One exchange per run: a run never reads another's messages, and deletes what it declared.
  const exchange = `chaos-${seed}-${process.pid}-${Date.now().toString(36)}`;
  const topology = brokerTopology(exchange, 'chaos');
  const proxy: TcpProxy = await startTcpProxy(`${target.hostname}:${target.port || '5672'}`);
  const workerUrl = new URL(url);
  workerUrl.hostname = '127.0.0.1';
  workerUrl.port = String(proxy.port);
  const counts = { consumerKillsBeforeAck: 0, publishCuts: 0 };
  let consumer: ManagedProcess | undefined;

  const running = () => {
    if (!consumer) throw new Error('the broker consumer has not started');
    return consumer;
  };

  return {
    exchange,
    topology,
    workerUrl: workerUrl.toString(),
    counts,
    consumerSchema: CONSUMER_SCHEMA,
    startConsumer: async (databaseUrl, env) => {
      consumer = managedProcess({
        name: 'broker-consumer',
        entry: 'tools/chaos/broker-consumer-main.ts',
        env: {
          ...env,
          AMQP_URL: url,
          ORDER_EVENTS_EXCHANGE: exchange,
          CONSUMER_NAME: 'chaos',
          // More than one unacked at a time: a kill leaves several to come again.
          CONSUMER_PREFETCH: '8',
          CONSUMER_DATABASE_URL: databaseUrl,
          CONSUMER_SCHEMA,
        },
        // Its queue is declared and bound by then, so no publish of the run is unroutable.
        readyLine: 'consuming order.created',
      });
      await consumer.start();
    },
    killConsumerBeforeAck: async (pauseMs, log) => {
      const current = running();
      const from = current.output().length;
      const pid = current.pid();
      if (pid !== undefined) process.kill(pid, 'SIGUSR2');
      // It holds the next message it applies; with no message arriving, the kill still happens.
      const deadline = Date.now() + 30_000;
      while (!current.output().slice(from).includes(ACK_HELD_LINE) && Date.now() < deadline) await sleep(50);
      const held = current.output().slice(from).includes(ACK_HELD_LINE);
      await current.kill('SIGKILL');
      if (held) counts.consumerKillsBeforeAck += 1;
      else log('broker consumer killed with no message committed and unacked (none arrived in 30 s)');
      await sleep(pauseMs);
      await current.start();
    },
    cutDuringPublish: async (log) => {
      const before = proxy.lostAnswers();
      await proxy.setMode({ kind: 'lose-one-answer', containing: PUBLISH_MARK, cutAfterMs: 100 });
      const deadline = Date.now() + 30_000;
      while (proxy.lostAnswers() === before && Date.now() < deadline) await sleep(50);
      // The publish is at the broker, its confirm will never come: now every connection goes.
      proxy.cutAll();
      if (proxy.lostAnswers() > before) counts.publishCuts += 1;
      else log('broker connections cut with no publish in flight (none came in 30 s)');
      await proxy.setMode({ kind: 'pass' });
    },
    queued: async () => (await channel.checkQueue(topology.queue)).messageCount,
    deliveries: () => readDeliveries(consumer?.output() ?? ''),
    consumerState: (lines) => {
      const ended = consumer?.exit();
      const state = !consumer ? 'never started' : ended ? `ended (${ended.signal ?? `exit ${ended.code}`})` : 'running';
      return `${state}; its last lines:\n${(consumer?.output() ?? '').trimEnd().split('\n').slice(-lines).join('\n')}`;
    },
    close: async () => {
      await consumer?.kill('SIGTERM');
      await proxy.close();
      for (const queue of [topology.queue, topology.deadLetterQueue]) await channel.deleteQueue(queue);
      for (const name of [topology.exchange, topology.deadLetterExchange]) await channel.deleteExchange(name);
      await admin.close();
    },
  };
}

/** Reads the consumer's JSON log lines: one per delivery it settled, with its outcome. */
function readDeliveries(output: string): ConsumerDeliveries {
  const result: ConsumerDeliveries = {
    applied: 0,
    redeliveriesAbsorbed: 0,
    republishesAbsorbed: 0,
    messageIdsDeliveredAgain: 0,
  };
  const seen = new Map<string, number>();
  for (const line of output.split('\n')) {
    if (!line.includes('"outcome"')) continue;
    let entry: { outcome?: string; redelivered?: boolean; messageId?: string };
    try {
      entry = JSON.parse(line) as typeof entry;
    } catch {
      continue;
    }
    if (entry.outcome === 'applied') result.applied += 1;
    else if (entry.outcome === 'duplicate' && entry.redelivered) result.redeliveriesAbsorbed += 1;
    else if (entry.outcome === 'duplicate') result.republishesAbsorbed += 1;
    if (entry.messageId) seen.set(entry.messageId, (seen.get(entry.messageId) ?? 0) + 1);
  }
  result.messageIdsDeliveredAgain = [...seen.values()].filter((count) => count > 1).length;
  return result;
}

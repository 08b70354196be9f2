// `npm run consumer:broker`: the reference consumer reading `order.created` from RabbitMQ
// (settings: examples/consumer/consumer-config.ts).
import { runMain } from '../../services/config/process.js';
import { runBrokerConsumerProcess } from './run-broker-consumer.js';

await runMain('broker-consumer', (log) => runBrokerConsumerProcess(log));

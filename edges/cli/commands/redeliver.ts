// `redeliver`: sends a failed delivery again.
import { deliveryDecision } from './decisions.js';

export const redeliverCommand = deliveryDecision(
  'redeliver',
  'send a failed delivery again — POST it and/or publish it to the broker: the same event, same key and event id (message id), under the same retry policy',
  '\nExit code 1 when the downstream or the broker refused it again (the key stays DELIVERY_FAILED).',
);

// `resubmit`: writes a compensating key's order again, with the same key.
import { decision } from './decisions.js';

export const resubmitCommand = decision(
  'resubmit',
  'write the order again with the same key (it can never double)',
  '\nA claim whose start was never confirmed (listed by `awaiting` as RECEIVED) is started instead.',
);

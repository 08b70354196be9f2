// `mark-handled`: closes a failed delivery without sending it.
import { deliveryDecision } from './decisions.js';

export const markHandledCommand = deliveryDecision(
  'mark-handled',
  'close a failed delivery without sending: status DELIVERED, recorded with who decided',
  '',
);

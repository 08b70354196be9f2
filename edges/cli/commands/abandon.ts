// `abandon`: gives a compensating key's order up.
import { decision } from './decisions.js';

export const abandonCommand = decision('abandon', 'give the order up: status COMPENSATED', '');

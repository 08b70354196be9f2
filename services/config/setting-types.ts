// The setting parsers more than one part of the configuration uses: secrets, switches, http(s)
// URLs, durations and bind addresses, each with the one message a bad value gets.
import { isIP } from 'node:net';
import { z } from 'zod';
import { standardSecretProblem } from '../../domain-node/signature.js';

/** Every shared secret (webhook, downstream events, MCP token) has the same floor. */
export const secretSetting = z.string().min(16, 'must be at least 16 characters');
/** A secret that signs or verifies: a `whsec_` one must also be usable as a Standard Webhooks key. */
export const signingSecretSetting = secretSetting.superRefine((secret, context) => {
  const problem = standardSecretProblem(secret);
  if (problem) context.addIssue({ code: 'custom', message: problem });
});

/** A switch, off unless set: `1` / `true` turn it on, `0` / `false` leave it off. */
export const switchSetting = z
  .enum(['0', '1', 'false', 'true'])
  .default('0')
  .transform((value) => value === '1' || value === 'true');

/**
 * An http(s) URL the service calls. Credentials in it are refused: `fetch` will not send a request
 * to a URL that carries them, and its error repeats the URL whole into logs, spans and `lastError`.
 * A receiver that needs a secret gets it in the query (redacted wherever the URL is shown).
 */
export const httpUrlSetting = z.url({ protocol: /^https?$/, message: 'must be an http(s) URL' }).refine((url) => {
  const parsed = new URL(url);
  return parsed.username === '' && parsed.password === '';
}, 'must not carry a user or password (put a token in the query instead)');

export const milliseconds = (fallback: number) => z.coerce.number().int().min(1).max(2_147_483_647).default(fallback);

// Loopback unless told otherwise: the endpoints bound with it have no authentication. An address,
// not a name: the SDK binds METRICS_HOST as a socket address, and the worker's probes keep the same rule.
export const bindAddressSetting = z
  .string()
  .refine((host) => isIP(host) !== 0, 'must be an IP address, e.g. 127.0.0.1, 0.0.0.0 or ::1')
  .default('127.0.0.1');

// What a process started with NODE_ENV=production refuses to run with, whatever the schema in env.ts
// accepts: plaintext where a secret or an order travels — a vendor's open API or DOWNSTREAM_URL over
// http://, a password in an amqp:// AMQP_URL — and a secret that is one of the placeholders the
// repository itself shows (deploy/, examples/, docs/). An example applied as it is would otherwise
// run with a secret anyone can read here, and pass every other check. Each refusal names the
// setting, never its value. Outside production nothing here applies: tests and `npm run dev` use
// http:// fakes of the vendors and the downstream, and the machine's RabbitMQ as guest.
// test/unit/app/env.test.ts reads every example file and holds each secret it sets to
// `isPlaceholderSecret`, so an example value added later is refused too or fails that test.
// The OA vendors' secrets and open-API addresses are each vendor's to declare (its settings.ts): the
// caller, which knows the vendors (app/env.ts), hands their lists in; plumbing knows none of them.

/** The OA vendors' settings production guards, as each vendor's own settings declare them. */
export interface VendorSettingLists {
  /** Those that hold a secret as they are. */
  secrets: readonly string[];
  /** The addresses of their open APIs: the app secret goes out over them and access tokens come back. */
  apiUrls: readonly string[];
}

/** The service's own settings that hold a secret as they are; each OA vendor's are its own to declare. */
export const SECRET_SETTINGS = [
  'WEBHOOK_SECRET',
  'WEBHOOK_SECRET_PREVIOUS',
  'DOWNSTREAM_SECRET',
  'DOWNSTREAM_SECRET_PREVIOUS',
  'MCP_TOKEN',
  'MCP_TOKEN_PREVIOUS',
  'MCP_OPERATOR_TOKEN',
  'STATUS_TOKEN',
  'TEMPORAL_API_KEY',
] as const;

/** The settings that are URLs whose password is a secret. */
export const CREDENTIAL_URL_SETTINGS = ['DATABASE_URL', 'DATABASE_MIGRATION_URL', 'AMQP_URL'] as const;

/**
 * The settings production requires as https:// URLs, each with what would cross in clear over
 * http://: the vendors' open APIs carry the app secret out and access tokens back; DOWNSTREAM_URL
 * carries every order event (a receiver's query token may sit in the URL too) and the answer that
 * decides whether the order counts as delivered.
 */
function httpsOnly(vendorApiUrls: readonly string[]): Readonly<Record<string, string>> {
  return {
    ...Object.fromEntries(vendorApiUrls.map((name) => [name, 'the app secret and access tokens go over it'])),
    DOWNSTREAM_URL: 'every order event and its answer go over it',
  };
}

/**
 * The placeholders, compared as `normalised` reads them. Whole values: the example manifests' own.
 * Beginnings: the words the examples and their readers write for "put yours here".
 */
const PLACEHOLDER_VALUES = ['replace-me-with-32-random-characters'];
const PLACEHOLDER_BEGINNINGS = ['replace-me', 'change-me'];

/** Case, spaces, `-` and `_` aside: `Change_Me`, ` CHANGEME ` and `change-me` are one placeholder. */
const normalised = (value: string) =>
  value
    .trim()
    .toLowerCase()
    .replace(/[\s_-]+/g, '');

/**
 * Whether `value` is a placeholder: one the examples show, one beginning with their words, one
 * written the way docs write "yours here" (`<secret>`), or a variable a shell or compose file was
 * meant to expand and did not (`${WEBHOOK_SECRET}`, `$WEBHOOK_SECRET`).
 */
export function isPlaceholderSecret(value: string): boolean {
  const trimmed = value.trim();
  // `$NAME` in capitals only, as variables are named: a generated secret may well begin with `$`.
  if (/^<.*>$/s.test(trimmed) || /^\$(\{.*\}|[A-Z_][A-Z0-9_]*)$/s.test(trimmed)) return true;
  const plain = normalised(value);
  return (
    PLACEHOLDER_VALUES.some((placeholder) => normalised(placeholder) === plain) ||
    PLACEHOLDER_BEGINNINGS.some((beginning) => plain.startsWith(normalised(beginning)))
  );
}

/**
 * The password of a `scheme://user:password@host/…` URL, percent-decoding undone; undefined when
 * it carries none. Read from the text, not through `URL`: an unexpanded `${…}` is no valid URL.
 */
export function urlPassword(url: string): string | undefined {
  const authority = authorityOf(url);
  const at = authority.lastIndexOf('@');
  if (at < 0) return undefined;
  const userinfo = authority.slice(0, at);
  const colon = userinfo.indexOf(':');
  if (colon < 0) return undefined;
  const password = userinfo.slice(colon + 1);
  try {
    return decodeURIComponent(password);
  } catch {
    return password;
  }
}

/**
 * What follows `scheme://` up to the first `/`, `?` or `#`, where a compose file's `${NAME:?message}`
 * counts whole, `?` and spaces included. One pass: the `}` that closes a `${` is searched for once
 * and remembered, so a run of `${` without one costs no more than its length.
 */
function authorityOf(url: string): string {
  const sep = url.indexOf('://');
  if (sep < 1 || !isScheme(url.slice(0, sep))) return '';
  const start = sep + 3;
  let end = start;
  let close = -2;
  while (end < url.length) {
    if (url.startsWith('${', end)) {
      if (close !== -1 && close < end) close = url.indexOf('}', end + 2);
      if (close !== -1) {
        end = close + 1;
        continue;
      }
    }
    if ('/?#'.includes(url[end] ?? '')) break;
    end += 1;
  }
  return url.slice(start, end);
}

/** A URL scheme: a letter, then letters, digits, `+`, `.` and `-`. */
function isScheme(text: string): boolean {
  return [...text].every((char, at) => (at === 0 ? /[A-Za-z]/ : /[A-Za-z0-9+.-]/).test(char));
}

/**
 * With NODE_ENV=production: each setting of `settings` (as given, empty ones dropped) it refuses,
 * named; the OA vendors' own among them as `vendors` lists them.
 */
export function productionProblems(
  settings: Readonly<Record<string, string | undefined>>,
  vendors: VendorSettingLists,
): string[] {
  const problems: string[] = [];
  for (const [name, why] of Object.entries(httpsOnly(vendors.apiUrls))) {
    const value = settings[name];
    if (value !== undefined && /^http:/i.test(value.trim())) {
      problems.push(`${name}: must be an https:// URL in production (${why})`);
    }
  }
  // amqplib logs in with PLAIN: over amqp:// the password crosses the network as it is written.
  // Without one there is nothing to read (amqplib then logs in as guest, whom RabbitMQ admits from
  // the loopback alone), so a broker beside the process, reached on 127.0.0.1, stays possible.
  const amqpUrl = settings.AMQP_URL;
  if (amqpUrl !== undefined && /^amqp:/i.test(amqpUrl.trim()) && urlPassword(amqpUrl.trim())) {
    problems.push(
      'AMQP_URL: carries a password over amqp://, which sends it in clear; production needs amqps:// (TLS) for it',
    );
  }
  for (const name of [...SECRET_SETTINGS, ...vendors.secrets]) {
    const value = settings[name];
    if (value !== undefined && isPlaceholderSecret(value)) {
      problems.push(`${name}: holds a placeholder the examples show; production needs a value of its own`);
    }
  }
  for (const name of CREDENTIAL_URL_SETTINGS) {
    const password = settings[name] === undefined ? undefined : urlPassword(settings[name]);
    if (password !== undefined && isPlaceholderSecret(password)) {
      problems.push(`${name}: its password is a placeholder the examples show; production needs the real one`);
    }
  }
  return problems;
}

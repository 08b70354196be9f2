// No text a stranger sends costs more than linear time. Every regular expression in the product is
// listed here with the text it meets, the list is checked against the source (a new expression
// fails this file until it is listed), and each one is run on inputs built to make a backtracking
// engine try every split: runs of one or two of its own characters after each of its literal
// parts (alone and after a letter), at the body limit of 256 KiB. The expressions the WeCom
// reader, the URL scrubber and the production check's password reader used to run are the broken
// variants: the same check finds each.
import assert from 'node:assert/strict';
import { readFileSync, readdirSync, statSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import ts from 'typescript';
import { redactUrl, scrubbed } from '../../domain-node/redact-url.js';
import { MAX_BODY_BYTES } from '../../edges/http/app.js';
import { xmlChildren } from '../../vendors/wecom/xml.js';
import {
  BACKTRACKING_URL,
  BACKTRACKING_URL_AUTHORITY,
  BACKTRACKING_XML_TOKEN,
  backtrackingXmlChildren,
} from '../../tools/harness/backtracking-parsers.js';
import { cpuMillisecondsOf, filled } from '../../tools/harness/hostile-input.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
/** The folders whose code runs in the product, the reference consumer included. */
const PRODUCT = [
  'domain',
  'domain-node',
  'edges',
  'services',
  'submission',
  'vendors',
  'workflows',
  'activities',
  'app',
  'worker',
  'examples',
];
/** How long one expression may take on one input at the body limit: /livez's budget. */
const BUDGET_MS = 100;

/** What each expression meets: a request or message (input), a log line, or a setting read at start. */
type Meets = 'input' | 'log line' | 'setting' | 'error message' | 'own output';

const LISTED: ReadonlyArray<readonly [file: string, expression: string, meets: Meets]> = [
  ['domain/error-classification.ts', '/^[0-9A-Z]{5}$/', 'error message'],
  [
    'domain/error-classification.ts',
    '/Failed to connect|ECONNREFUSED|No connection established|deadline/i',
    'error message',
  ],
  ['domain/door.ts', '/^[a-z][a-z0-9-]{1,31}$/', 'input'],
  // A card click's episode, from the button a verified click names.
  ['submission/operator-decisions/cards.ts', '/^([a-z-]+)-([0-9a-z]{1,12})$/', 'input'],
  ['domain/error-classification.ts', '/^([A-Za-z][A-Za-z0-9]*): /', 'error message'],
  ['domain/form-mapping.ts', '/^[A-Z]{3}$/', 'input'],
  ['domain/form-mapping.ts', '/^\\d{1,9}$/', 'input'],
  ['domain/idempotency-key.ts', '/^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/', 'input'],
  ['domain/idempotency-key.ts', '/^APPROVAL:([A-Za-z0-9][A-Za-z0-9._-]{0,63}):(MAIN|SUPPLEMENT)$/', 'input'],
  ['domain/money.ts', '/^(\\d{1,14})(?:\\.(\\d{1,4}))?$/', 'input'],
  ['vendors/wecom/status.ts', '/^\\d{1,3}$/', 'input'],
  ['domain/order-input.ts', '/^[\\x20-\\x7e]+$/', 'input'],
  ['domain/order-input.ts', '/^\\d{1,12}(\\.\\d{1,4})?$/', 'input'],
  ['domain/order-input.ts', '/^[A-Za-z0-9._-]{1,64}$/', 'input'],
  ['domain/order-input.ts', '/^[A-Z]{3}$/', 'input'],
  ['domain/order-input.ts', '/~/g', 'input'],
  ['domain/order-input.ts', '/\\//g', 'input'],
  ['domain/retry-after.ts', '/^\\d+$/', 'input'],
  ['domain/retry-after.ts', '/^[A-Za-z]{3}/', 'input'],
  ['domain-node/signature.ts', '/^[A-Za-z0-9+/]*={0,2}$/', 'input'],
  ['domain-node/signature.ts', '/^\\d{1,12}$/', 'input'],
  ['domain-node/signature.ts', '/^\\d{1,15}$/', 'input'],
  ['domain-node/signature.ts', '/^[\\x21-\\x2d\\x2f-\\x7e]{1,256}$/', 'input'],
  ['vendors/dingtalk/stream.ts', '/^[A-Za-z0-9._-]{1,64}$/', 'input'],
  // A Stream frame's messageId, from DingTalk's own connection.
  ['vendors/dingtalk/stream-frames.ts', '/^[A-Za-z0-9._:-]{1,128}$/', 'input'],
  ['vendors/message-crypto.ts', '/^[A-Za-z0-9+/]{43}$/', 'setting'],
  ['edges/http/accept-sockets.ts', '/^v/', 'setting'],
  ['edges/http/app.ts', '/^\\/problems\\//', 'own output'],
  ['edges/http/connection-caps.ts', '/^::ffff:(\\d+\\.\\d+\\.\\d+\\.\\d+)$/i', 'input'],
  ['edges/http/prefer.ts', '/^\\d+$/', 'input'],
  ['edges/http/prefer.ts', '/\\\\(.)/g', 'input'],
  ['edges/mcp/bearer-token.ts', '/^Bearer +(\\S+) *$/i', 'input'],
  ['examples/consumer/consumer-config.ts', '/^[a-z_][a-z0-9_]{0,62}$/', 'setting'],
  ['examples/consumer/consumer-config.ts', '/^[A-Za-z0-9_-]{1,48}$/', 'setting'],
  ['services/broker/settings.ts', '/^[A-Za-z0-9_.:-]{1,255}$/', 'setting'],
  ['services/config/setting-types.ts', '/^https?$/', 'setting'],
  ['services/telemetry/settings.ts', '/^https?$/', 'setting'],
  ['vendors/dingtalk/settings.ts', '/^[A-Za-z0-9+/]{43}$/', 'setting'],
  ['vendors/dingtalk/settings.ts', '/^[A-Za-z0-9_-]{1,64}$/', 'setting'],
  ['vendors/dingtalk/settings.ts', '/^[A-Za-z0-9._-]{1,128}$/', 'setting'],
  ['vendors/dingtalk/settings.ts', '/^dtv1\\.card\\/\\/(IM_GROUP|IM_ROBOT)\\.([A-Za-z0-9_+/=$-]{1,128})$/', 'setting'],
  ['vendors/wecom/settings.ts', '/^[A-Za-z0-9+/]{43}$/', 'setting'],
  ['vendors/wecom/settings.ts', '/^[A-Za-z0-9._@-]{1,64}$/', 'setting'],
  // A card click's button key (WeCom) or action (DingTalk), from a verified click.
  ['vendors/decision-cards.ts', '/^([a-z-]{1,32}):([a-z0-9-]{1,64}):(.{1,200})$/s', 'input'],
  // WeCom's task id: the service's own send key.
  ['vendors/wecom/decision-cards.ts', '/^[A-Za-z0-9_@-]{1,128}$/', 'own output'],
  ['services/telemetry/settings.ts', '/^(true|false)$/i', 'setting'],
  ['vendors/feishu/settings.ts', '/^cli_[0-9a-fA-F]{16}$/', 'setting'],
  ['vendors/feishu/settings.ts', '/^oc_[0-9A-Za-z]{1,64}$/', 'setting'],
  ['vendors/feishu/settings.ts', '/^ou_[0-9A-Za-z]{1,64}$/', 'setting'],
  ['services/temporal/settings.ts', '/^[A-Za-z0-9.\\-[\\]:]+:\\d{1,5}$/', 'setting'],
  ['services/temporal/settings.ts', '/^(0|1|true|false)$/i', 'setting'],
  ['services/temporal/settings.ts', '/^(1|true)$/i', 'setting'],
  ['services/temporal/settings.ts', '/^Invalid TOML document: /', 'error message'],
  ['services/temporal/settings.ts', '/^[a-z0-9][a-z0-9.-]*$/', 'setting'],
  ['services/temporal/settings.ts', '/^[\\x20-\\x7e]*$/', 'setting'],
  ['services/config/production-refusals.ts', '/[\\s_-]+/g', 'setting'],
  ['services/config/production-refusals.ts', '/^<.*>$/s', 'setting'],
  ['services/config/production-refusals.ts', '/[A-Za-z]/', 'setting'],
  ['services/config/production-refusals.ts', '/[A-Za-z0-9+.-]/', 'setting'],
  ['services/config/production-refusals.ts', '/^\\$(\\{.*\\}|[A-Z_][A-Z0-9_]*)$/s', 'setting'],
  ['services/config/production-refusals.ts', '/^http:/i', 'setting'],
  ['services/config/production-refusals.ts', '/^amqp:/i', 'setting'],
  ['services/db/order-repository.ts', '/"/g', 'own output'],
  ['vendors/dingtalk/open-api.ts', '/QpsLimit|Throttling/i', 'input'],
  ['services/telemetry/span-conventions.ts', '/^\\[(.*)\\]$/', 'setting'],
  ['services/temporal/connection.ts', '/^\\[|\\]$/g', 'setting'],
  ['services/temporal/connection.ts', '/SSL routines:[^:]*:([^:]+)/', 'error message'],
  ['services/temporal/connection.ts', '/WRONG_VERSION_NUMBER|PACKET_LENGTH_TOO_LONG/', 'error message'],
  ['services/temporal/connection.ts', '/ALERT/', 'error message'],
  ['services/temporal/worker-deployment.ts', '/\\\\/g', 'setting'],
  ['services/temporal/worker-deployment.ts', '/"/g', 'setting'],
  ['examples/consumer/apply-once.ts', '/^evt_[A-Za-z0-9]{1,60}$/', 'input'],
  ['examples/consumer/apply-once.ts', '/^\\d{1,14}(\\.\\d{1,4})?$/', 'input'],
  ['examples/consumer/apply-once.ts', '/^[a-z_][a-z0-9_]*$/', 'setting'],
  ['examples/consumer/broker-consumer.ts', '/^Handshake terminated by server: (\\d{3}) /', 'error message'],
];

function* sourceFiles(dir: string): Generator<string> {
  for (const entry of readdirSync(dir)) {
    const full = path.join(dir, entry);
    if (entry === 'node_modules' || entry === 'generated') continue;
    if (statSync(full).isDirectory()) yield* sourceFiles(full);
    else if (/\.(ts|mts|mjs|js)$/.test(entry)) yield full;
  }
}

/** Every regular expression in the product's source, as written, and every RegExp built at run time. */
function expressionsInSource(): { literals: string[]; constructed: string[] } {
  const literals: string[] = [];
  const constructed: string[] = [];
  for (const folder of PRODUCT) {
    for (const file of sourceFiles(path.join(ROOT, folder))) {
      const relative = path.relative(ROOT, file);
      const source = ts.createSourceFile(file, readFileSync(file, 'utf8'), ts.ScriptTarget.Latest, true);
      const visit = (node: ts.Node): void => {
        if (node.kind === ts.SyntaxKind.RegularExpressionLiteral) literals.push(`${relative} ${node.getText()}`);
        if ((ts.isNewExpression(node) || ts.isCallExpression(node)) && node.expression.getText() === 'RegExp') {
          constructed.push(`${relative}: ${node.getText()}`);
        }
        ts.forEachChild(node, visit);
      };
      visit(source);
    }
  }
  return { literals, constructed };
}

function regExpOf(literal: string): RegExp {
  const slash = literal.lastIndexOf('/');
  return new RegExp(literal.slice(1, slash), literal.slice(slash + 1));
}

/** The literal parts of an expression's source (`<`, `Bearer `, `APPROVAL:`), where a run may start. */
function literalParts(source: string): string[] {
  const parts = new Set<string>(['']);
  let current = '';
  const flush = () => {
    if (current !== '') parts.add(current);
    current = '';
  };
  for (let at = 0; at < source.length; at += 1) {
    const char = source[at] ?? '';
    if (char === '\\') {
      const next = source[at + 1] ?? '';
      at += 1;
      if (/[A-Za-z0-9]/.test(next)) flush();
      else current += next;
    } else if (char === '[') {
      flush();
      while (at < source.length && source[at] !== ']') at += source[at] === '\\' ? 2 : 1;
    } else if ('()|*+?^$.{}'.includes(char)) {
      flush();
    } else {
      current += char;
    }
  }
  flush();
  return [...parts];
}

/** The characters a run is made of: the expression's own, and a few of every kind. */
function alphabetOf(source: string): string[] {
  const own = [...source].filter((char) => char >= ' ' && char <= '~' && char !== '\\');
  return [...new Set([...own, 'a', 'A', '0', ' ', '.', ':', '/', '<', '_', '-', '\n'])];
}

/** What a hostile input is made of: a literal part, then a run of one or two characters. */
function* hostileShapes(source: string): Generator<{ part: string; unit: string }> {
  const alphabet = alphabetOf(source);
  const units = [...alphabet, ...alphabet.flatMap((a) => alphabet.map((b) => a + b))];
  // A part also after a letter: an expression anchored on a scheme or a name reaches it only so.
  const parts = literalParts(source).flatMap((part) => (part === '' ? [part] : [part, `a${part}`]));
  for (const part of parts) for (const unit of units) yield { part, unit };
}

/** Runs `regex` over `text` as the product does: every match of a global one, else the first. */
function runOver(regex: RegExp, text: string): void {
  if (!regex.global) {
    regex.exec(text);
    return;
  }
  regex.lastIndex = 0;
  for (let match = regex.exec(text); match; match = regex.exec(text)) {
    if (match[0] === '') regex.lastIndex += 1;
  }
}

/**
 * The inputs on which `regex` takes longer than `budgetMs` at `size` characters (the first
 * `enough` of them). Each shape is first tried at 16 KiB, where a linear expression takes
 * microseconds and a quadratic one tens of milliseconds; only the suspects run again at full size.
 */
function slowInputs(regex: RegExp, size: number, budgetMs: number, enough = Infinity): string[] {
  const slow: string[] = [];
  for (const shape of hostileShapes(regex.source)) {
    if (cpuMillisecondsOf(() => runOver(regex, filled(16 * 1024, shape.unit, shape.part))) < budgetMs / 10) continue;
    const ms = cpuMillisecondsOf(() => runOver(regex, filled(size, shape.unit, shape.part)));
    if (ms > budgetMs) slow.push(`${JSON.stringify(shape)} × ${size}: ${ms.toFixed(0)} ms`);
    if (slow.length >= enough) break;
  }
  return slow;
}

describe('regular expressions on what a stranger sends', () => {
  it('every expression in the product is listed here with what it meets', () => {
    const { literals, constructed } = expressionsInSource();
    assert.deepEqual(constructed, [], 'a RegExp built at run time cannot be checked here: write it as a literal');
    const listed = LISTED.map(([file, expression]) => `${file} ${expression}`);
    assert.deepEqual([...new Set(literals)].sort(), [...new Set(listed)].sort());
  });

  it(`each takes under ${BUDGET_MS} ms on every hostile input at the body limit`, () => {
    for (const [file, expression] of LISTED) {
      const slow = slowInputs(regExpOf(expression), MAX_BODY_BYTES, BUDGET_MS);
      assert.deepEqual(slow, [], `${file} ${expression}`);
    }
  });

  it('finds the expressions the WeCom reader, the URL scrubber and the password reader used to run, at an eighth of the limit', () => {
    for (const regex of [BACKTRACKING_XML_TOKEN, BACKTRACKING_URL, BACKTRACKING_URL_AUTHORITY]) {
      assert.notDeepEqual(slowInputs(regex, MAX_BODY_BYTES / 8, BUDGET_MS, 1), [], String(regex));
    }
  });
});

describe('the linear readers', () => {
  const worst = (unit: string, prefix = '') => filled(MAX_BODY_BYTES, unit, prefix);

  it(`read a body at the limit built against them in under ${BUDGET_MS} ms`, () => {
    const hostile = [
      worst('a', '<'),
      worst('<a'),
      worst('<'),
      worst('&'),
      worst('&amp'),
      worst('a', '<xml><![CDATA['),
      worst('a', '<!--'),
      worst('<x>'),
      worst('a', '<xml><A>'),
      worst('a.'),
      worst('1://'),
      worst('a:// '),
      worst('a', 'http://'),
    ];
    for (const text of hostile) {
      const ms = cpuMillisecondsOf(() => {
        xmlChildren(text);
        scrubbed(text, ['secret']);
      });
      assert.ok(ms < BUDGET_MS, `${JSON.stringify(text.slice(0, 20))}…: ${ms.toFixed(0)} ms`);
    }
  });

  const pieces = fc.constantFrom(
    ...['<', '>', '/', 'a', 'B', '_', '.', '-', '1', ' ', '\n', '<a>', '</a>', '<b/>', '</b>', '<xml>', '</xml>'],
    ...['<![CDATA[', ']]>', '<!--', '-->', '<?', '?>', '&lt;', '&amp;', '&', '&x;', ';', '<!DOCTYPE x>', '"', '='],
  );

  it('reads every generated document as the expression it replaced did', () => {
    const documents = fc.oneof(
      fc.array(pieces, { maxLength: 30 }).map((parts) => parts.join('')),
      fc.array(pieces, { maxLength: 30 }).map((parts) => `<xml>${parts.join('')}</xml>`),
    );
    const entries = (read: Map<string, string> | undefined) => read && [...read];
    fc.assert(
      fc.property(documents, (document) => {
        assert.deepEqual(entries(xmlChildren(document)), entries(backtrackingXmlChildren(document)));
      }),
      { numRuns: 5_000 },
    );
  });

  it('scrubs every generated line as the expression it replaced did', () => {
    const lineParts = fc.constantFrom(
      ...['a', 'B', '1', '_', '.', '+', '-', ':', '/', '://', '?', '=', '&', ' ', '\t', '\u00a0', '"', "'", '<'],
      ...['>', '@', 'x.y', 'https', 'secret', '#'],
    );
    const replaced = (text: string) =>
      text
        .replace(BACKTRACKING_URL, (url) => redactUrl(url))
        .split('secret')
        .join('REDACTED');
    fc.assert(
      fc.property(
        fc.array(lineParts, { maxLength: 40 }).map((parts) => parts.join('')),
        (line) => assert.equal(scrubbed(line, ['secret']), replaced(line)),
      ),
      { numRuns: 5_000 },
    );
  });
});

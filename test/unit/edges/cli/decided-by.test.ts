// `--by NAME` of the operator decisions is checked where it is parsed: a name the decision record
// cannot store, no name at all, or a name that begins with a door's mark (a person signing as
// `mcp-operator:…`), is a usage error (exit 2) before anything is contacted — not a decision that
// fails, or is retried, once it reaches the workflow.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import fc from 'fast-check';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { loadConfig } from '../../../../app/env.js';
import { COMMANDS } from '../../../../edges/cli/commands/index.js';
import { UsageError } from '../../../../edges/cli/commands/shared.js';
import { runCommand } from '../../../../edges/cli/run-cli.js';
import type { CommandContext } from '../../../../edges/cli/context.js';
import { DECIDED_BY_MAX_LENGTH, DOOR_PREFIXES } from '../../../../domain/decided-by.js';

const ROOT = fileURLToPath(new URL('../../../..', import.meta.url));
const KEY = 'APPROVAL:AP-BY-1:MAIN';
const DECISIONS = ['resubmit', 'abandon', 'recompensate', 'redeliver', 'mark-handled'];
const TOO_LONG = 'o'.repeat(DECIDED_BY_MAX_LENGTH + 1);

/** A context that fails the test if the command contacts anything. */
function untouchableContext(): CommandContext {
  const touched = (what: string) => () => {
    throw new Error(`the command reached ${what} although --by was refused`);
  };
  return {
    config: loadConfig({}),
    prisma: touched('the database'),
    uncheckedPrisma: touched('the database'),
    temporal: touched('Temporal'),
    lazyTemporal: touched('Temporal'),
    progress: () => {},
    close: () => Promise.resolve(),
  };
}

function command(name: string) {
  const found = COMMANDS.find((candidate) => candidate.name === name);
  assert.ok(found, `the command ${name} exists`);
  return found;
}

describe('orders-cli --by', () => {
  const dataDir = mkdtempSync(path.join(tmpdir(), 'orders-cli-by-'));
  after(() => rmSync(dataDir, { recursive: true, force: true }));

  it('refuses a name longer than the decision record stores, or an empty one, before contacting anything', async () => {
    for (const name of DECISIONS) {
      for (const by of [TOO_LONG, '', '   ']) {
        await assert.rejects(
          command(name).run(untouchableContext(), { by }, [KEY]),
          (error: Error) => error instanceof UsageError && /^--by /.test(error.message),
          `${name} --by ${JSON.stringify(by.slice(0, 10))}`,
        );
      }
    }
  });

  it(`accepts a name of exactly ${DECIDED_BY_MAX_LENGTH} characters, counted as the column counts them`, async () => {
    // Past the check, the command reaches its stack: that is what the untouchable context reports.
    for (const by of ['o'.repeat(DECIDED_BY_MAX_LENGTH), '运'.repeat(DECIDED_BY_MAX_LENGTH), '😀'.repeat(100)]) {
      await assert.rejects(
        command('resubmit').run(untouchableContext(), { by }, [KEY]),
        /reached (Temporal|the database)/,
      );
    }
  });

  it('refuses a name that begins with a door prefix, whatever follows, before contacting anything', async () => {
    // The doors a decision is recorded through today; one added to the list is covered below unasked.
    for (const door of ['card:', 'cli:', 'mcp-operator:', 'mcp-stdio:']) assert.ok(DOOR_PREFIXES.includes(door), door);
    // As a reader of the record would take it: any case, spaces before it, full-width forms.
    const asWritten = (prefix: string) =>
      fc
        .record({
          upper: fc.array(fc.boolean(), { minLength: prefix.length, maxLength: prefix.length }),
          before: fc.constantFrom('', ' ', '\t'),
          fullWidth: fc.boolean(),
        })
        .map(({ upper, before, fullWidth }) => {
          const cased = [...prefix].map((c, i) => (upper[i] ? c.toUpperCase() : c)).join('');
          return before + (fullWidth ? cased.replace(':', '：') : cased);
        });
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom(...DECISIONS, 'clear-conflict'),
        fc.constantFrom(...DOOR_PREFIXES).chain((prefix) => fc.tuple(fc.constant(prefix), asWritten(prefix))),
        fc.string({ maxLength: 40 }),
        async (name, [prefix, written], suffix) => {
          await assert.rejects(
            command(name).run(untouchableContext(), { by: written + suffix }, [KEY]),
            (error: Error) =>
              error instanceof UsageError && error.message.startsWith(`--by must not begin with "${prefix}"`),
          );
        },
      ),
    );
  });

  it('takes a name with a colon anywhere but after a door’s mark', async () => {
    for (const by of ['ops:alice', 'alice:night-shift', 'team:mcp-operator:x', 'cardinal:x', 'mcp-operator', 'card']) {
      await assert.rejects(
        command('abandon').run(untouchableContext(), { by }, [KEY]),
        /reached (Temporal|the database)/,
        by,
      );
    }
  });

  it('exits 2 with a message naming --by and its limit', async () => {
    // The command line in-process, as the bin runs it, with no stack: nothing is contacted.
    const inProcess = async (args: string[]) => {
      let stderr = '';
      const code = await runCommand(COMMANDS, args, {
        out: () => {},
        err: (text) => (stderr += `${text}\n`),
        config: () => loadConfig({}),
      });
      return { code, stderr };
    };
    for (const args of [
      ['resubmit', KEY, '--by', TOO_LONG],
      ['abandon', KEY, '--by', ''],
      ['mark-handled', KEY, '--by', 'mcp-operator:alice'],
    ]) {
      const { code, stderr } = await inProcess(args);
      assert.equal(code, 2, `${args.join(' ').slice(0, 40)}: ${stderr}`);
      assert.match(stderr, /^--by /);
    }
    const { stderr } = await inProcess(['recompensate', KEY, '--by', TOO_LONG]);
    assert.match(stderr, new RegExp(`at most ${DECIDED_BY_MAX_LENGTH} characters`));

    // And once through the bin, with no stack at all: the process exits 2 with the same message.
    const bin = await new Promise<{ code: number; stderr: string }>((resolve) => {
      execFile(
        process.execPath,
        [path.join(ROOT, 'bin/orders-cli.mjs'), 'recompensate', KEY, '--by', TOO_LONG],
        { cwd: ROOT, env: { PATH: process.env.PATH, DATA_DIR: dataDir }, timeout: 60_000 },
        (error, _stdout, stderr) => resolve({ code: error ? Number(error.code ?? 1) : 0, stderr }),
      );
    });
    assert.equal(bin.code, 2, bin.stderr);
    assert.match(bin.stderr, new RegExp(`^--by .*at most ${DECIDED_BY_MAX_LENGTH} characters`));
  });
});

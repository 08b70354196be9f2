// Runs one of the project's tools (the chaos harness, the explorer) as a child process with
// `--out <file>`, and reads the JSON result it wrote there, with its exit code and its output.
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { nodeArgsFor } from './test-build.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

export async function runToolForResult<T>(
  entry: string,
  args: string[],
): Promise<{ code: number; result: T; output: string }> {
  const out = path.join(mkdtempSync(path.join(os.tmpdir(), 'tool-result-')), 'result.json');
  // From the test run's build under plain node when there is one, like the processes it starts.
  const child = spawn(process.execPath, [...nodeArgsFor(entry), ...args, '--out', out], {
    cwd: ROOT,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')));
  child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')));
  const code = await new Promise<number>((resolve) => child.once('exit', (exitCode) => resolve(exitCode ?? 1)));
  if (!existsSync(out)) throw new Error(`${entry} wrote no result (exit ${code}):\n${output.slice(-6_000)}`);
  return { code, result: JSON.parse(readFileSync(out, 'utf8')) as T, output };
}

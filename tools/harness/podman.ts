// podman as the image test drives it: the flags this kind of machine needs (runc with cgroupfs;
// crun refuses the cgroup layout and the default rlimits), the host's network (the suite's stack
// listens on the loopback), and every command's output kept for the message of a failure.
import { readFileSync } from 'node:fs';
import { type CommandResult, runCommand } from './command.js';

export type { CommandResult };

/** Before every podman command. */
const GLOBAL_FLAGS = ['--runtime', 'runc', '--cgroup-manager=cgroupfs'];

/** Every container: the host's network, and rlimits runc can set. */
const RUN_FLAGS = ['--network', 'host', '--ulimit', 'nofile=1024:1024', '--ulimit', 'nproc=1024:1024'];

/** Runs podman; rejects with the command and its output when it fails, unless `allowFailure`. */
export async function podman(
  args: string[],
  options: { cwd?: string; allowFailure?: boolean } = {},
): Promise<CommandResult> {
  const result = await runCommand('podman', [...GLOBAL_FLAGS, ...args], { cwd: options.cwd });
  if (result.code === 0 || options.allowFailure) return result;
  throw new Error(`podman ${args.join(' ')} exited ${result.code}:\n${(result.stdout + result.stderr).slice(-6_000)}`);
}

const envFlags = (env: Record<string, string>) =>
  Object.entries(env).flatMap(([name, value]) => ['-e', `${name}=${value}`]);

/**
 * A command of the image in a container of its own that is removed when it ends, as a deploy
 * pipeline or an operator would run it; the root file system read-only, as the manifests run it.
 */
export function runOnce(image: string, env: Record<string, string>, command: string[]): Promise<CommandResult> {
  return podman(['run', '--rm', '--read-only', ...RUN_FLAGS, ...envFlags(env), image, ...command], {
    allowFailure: true,
  });
}

export interface Container {
  name: string;
  logs: () => Promise<string>;
  /** The user id the container's main process runs as, read from the host's /proc. */
  processUid: () => Promise<number>;
  /** `podman stop`: SIGTERM, and SIGKILL after `graceSeconds`; how it exited and how long it took. */
  stop: (graceSeconds: number) => Promise<{ exitCode: number; seconds: number }>;
}

/** Starts `command` of the image (its CMD when empty) in the background, read-only like `runOnce`. */
export async function startContainer(
  name: string,
  image: string,
  env: Record<string, string>,
  command: string[] = [],
): Promise<Container> {
  await podman(['run', '--detach', '--name', name, '--read-only', ...RUN_FLAGS, ...envFlags(env), image, ...command]);
  const inspect = async (format: string) => (await podman(['inspect', '--format', format, name])).stdout.trim();
  return {
    name,
    logs: async () => {
      const { stdout, stderr } = await podman(['logs', name], { allowFailure: true });
      return stdout + stderr;
    },
    processUid: async () => {
      const status = readFileSync(`/proc/${await inspect('{{.State.Pid}}')}/status`, 'utf8');
      const uid = /^Uid:\s+(\d+)/m.exec(status)?.[1];
      if (uid === undefined) throw new Error(`no Uid line in the status of ${name}'s process`);
      return Number(uid);
    },
    stop: async (graceSeconds) => {
      const started = Date.now();
      await podman(['stop', '--time', String(graceSeconds), name]);
      const seconds = (Date.now() - started) / 1000;
      return { exitCode: Number(await inspect('{{.State.ExitCode}}')), seconds };
    },
  };
}

// The machine's container tools, for `npm run test:image`: podman builds and runs the image, runc is
// its runtime, mmdebstrap makes the Node base image from Debian's packages (no image registry is
// needed). All three are Debian packages; the test runner installs them when it runs as root, and
// says the command otherwise.
import { spawnSync } from 'node:child_process';

export const CONTAINER_PACKAGES = ['podman', 'runc', 'mmdebstrap'];

/** The one command that installs them; with their recommends, as podman's storage helpers are. */
export const CONTAINER_TOOLS_INSTALL = `apt-get update && apt-get install -y ${CONTAINER_PACKAGES.join(' ')}`;

/** Those of them that do not run here (runc is in /usr/sbin, off a non-root user's PATH). */
export function missingContainerTools(): string[] {
  return CONTAINER_PACKAGES.filter(
    (tool) =>
      ![tool, `/usr/sbin/${tool}`].some((bin) => spawnSync(bin, ['--version'], { stdio: 'ignore' }).status === 0),
  );
}

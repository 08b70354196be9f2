// The release's software bill of materials: `npm sbom` (CycloneDX) of what a production install
// holds — the lockfile's packages without the development and optional ones, as
// `npm ci --omit=dev --omit=optional` installs them — written to dist/sbom.cdx.json by
// `npm run build`, so the package and the image carry it. The packages are chosen by the
// lockfile's own flags, which are what `npm ci` omits by: `npm sbom --omit dev` drops packages that
// are also some package's peer (pg among them). npm names the root after its folder; the document
// names it after package.json, as an application.
import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const OUTPUT = path.join(ROOT, 'dist', 'sbom.cdx.json');

const { name, version } = JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8'));
const lock = JSON.parse(readFileSync(path.join(ROOT, 'package-lock.json'), 'utf8'));
/** `name@version` of every package a production install holds. */
const installed = new Set(
  Object.entries(lock.packages)
    .filter(([where, entry]) => where !== '' && !entry.dev && !entry.optional && !entry.devOptional)
    .map(([where, entry]) => `${entry.name ?? where.slice(where.lastIndexOf('node_modules/') + 13)}@${entry.version}`),
);
const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';
const bom = JSON.parse(
  execFileSync(npm, ['sbom', '--sbom-format', 'cyclonedx', '--package-lock-only'], {
    cwd: ROOT,
    encoding: 'utf8',
    maxBuffer: 64 * 1024 * 1024,
  }),
);
const root = bom.metadata.component['bom-ref'];
const kept = (ref) => ref === root || installed.has(ref);
bom.metadata.component = { ...bom.metadata.component, name, version, type: 'application' };
bom.components = bom.components.filter((component) => kept(component['bom-ref']));
bom.dependencies = (bom.dependencies ?? [])
  .filter((dependency) => kept(dependency.ref))
  .map((dependency) => ({ ...dependency, dependsOn: (dependency.dependsOn ?? []).filter(kept) }));
writeFileSync(OUTPUT, `${JSON.stringify(bom, null, 2)}\n`);
console.log(`sbom: ${path.relative(ROOT, OUTPUT)}, ${bom.components.length} packages (CycloneDX ${bom.specVersion})`);

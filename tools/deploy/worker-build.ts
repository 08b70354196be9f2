// The workers' build: the image's tag plus a short hash of their pod template, the scheme the
// Temporal Worker Controller names its builds by (docs/production.md, "Builds that name the code").
// A change to anything the pods run — the image's digest, a setting, a resource — is a new build,
// started beside the old one, and so is a re-pushed tag whose digest the kustomization pins; the
// tag alone would let a changed pod replace the old build's workers under the same id, under runs
// pinned to it.
//
// Pure functions: `npm run deploy:build` (tools/deploy/write-worker-build.ts) writes what they
// compute into deploy/kubernetes/kustomization.yaml, and test/unit/deploy/worker-build.test.ts holds
// the committed values to them.

/** A Kubernetes label value and a Temporal build id at once: 63 at most, alphanumeric at both ends. */
const MAX_BUILD_ID = 63;
/**
 * The build's part of a resource name. `orders-migrate-` + 32 = 47, the longest Deployment or Job
 * name whose pods' generated names stay DNS labels (the controller caps its Deployments the same).
 */
export const MAX_BUILD_NAME = 32;
/** `-` and the four characters of the hash. */
const HASH_SUFFIX = 5;

/** What a tag may not hold in a build id: anything but letters, digits, `.`, `_` and `-`. */
const NOT_BUILD_ID = /[^a-zA-Z0-9._-]+/g;
/** What a DNS label may not hold. */
const NOT_DNS_LABEL = /[^a-z0-9-]+/g;
/** The characters Kubernetes encodes a hash with, which spell no word (its rand.SafeEncodeString). */
const SAFE_ALPHABET = 'bcdfghjklmnpqrstvwxz2456789';

/** Separators trimmed from both ends, each end alone, without a backtracking pattern. */
function trimSeparators(text: string, separators: string): string {
  let start = 0;
  let end = text.length;
  while (start < end && separators.includes(text[start]!)) start += 1;
  while (end > start && separators.includes(text[end - 1]!)) end -= 1;
  return text.slice(start, end);
}

/**
 * The part of an image reference a build is named by, as the controller reads it: the tag
 * (`registry.local:5000/orders:1.2.3@sha256:…` → `1.2.3`); without a tag, the digest's hex; without
 * either, the repository's path.
 */
export function imageLabel(image: string): string {
  const at = image.indexOf('@');
  const [name, digest] = at === -1 ? [image, undefined] : [image.slice(0, at), image.slice(at + 1)];
  const slash = name.lastIndexOf('/');
  const colon = name.lastIndexOf(':');
  // A `:` before the last `/` is a registry's port, not a tag.
  if (colon > slash) return name.slice(colon + 1);
  if (digest) return digest.slice(digest.indexOf(':') + 1);
  const first = name.split('/')[0] ?? '';
  const hasRegistry = slash !== -1 && (first.includes('.') || first.includes(':') || first === 'localhost');
  return hasRegistry ? name.slice(name.indexOf('/') + 1) : name;
}

/** FNV-1a, 32 bits: the hash Kubernetes and the controller take of a pod template. */
function fnv1a32(text: string): number {
  let hash = 0x811c9dc5;
  for (const byte of new TextEncoder().encode(text)) {
    hash ^= byte;
    hash = Math.imul(hash, 0x01000193) >>> 0;
  }
  return hash;
}

/** JSON with every object's keys sorted: the same template hashes the same however it was written. */
export function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([, item]) => item !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([key, item]) => `${JSON.stringify(key)}:${canonicalJson(item)}`).join(',')}}`;
  }
  return JSON.stringify(value);
}

/**
 * Four characters from a pod template, as the controller shortens its hash: FNV-1a of the
 * template, modulo 10000, each decimal digit in the safe alphabet. The controller hashes Go's JSON
 * of the template and this the sorted JSON of the rendered one, so the two never name the same
 * template alike; each is stable for its own renders, which is what a build id needs.
 */
export function templateHash(template: unknown): string {
  const digits = String(fnv1a32(canonicalJson(template)) % 10000).padStart(4, '0');
  return [...digits].map((digit) => SAFE_ALPHABET[digit.charCodeAt(0) % SAFE_ALPHABET.length]).join('');
}

/** The build of workers running `image` from `template`: `<tag>-<hash>`, a label value and a build id. */
export function buildId(image: string, template: unknown): string {
  const label = imageLabel(image).slice(0, MAX_BUILD_ID - HASH_SUFFIX);
  return trimSeparators(`${label}-${templateHash(template)}`.replace(NOT_BUILD_ID, '-'), '-._');
}

/** A build id as part of a resource name: lower case, `-` for what a DNS label refuses, the hash kept. */
export function buildName(id: string): string {
  const hash = id.slice(-(HASH_SUFFIX - 1));
  const label = id.slice(0, -HASH_SUFFIX).toLowerCase().replace(NOT_DNS_LABEL, '-');
  const kept = trimSeparators(label.slice(0, MAX_BUILD_NAME - HASH_SUFFIX), '-');
  return kept ? `${kept}-${hash}` : hash;
}

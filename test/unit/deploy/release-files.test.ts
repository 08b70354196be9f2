// The release names itself the same way everywhere: the licence file is the licence package.json
// declares, the changelog's newest entry is package.json's version, and the image the deploy
// examples run and the labels the Dockerfile writes carry that same version, set in one place each.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { parse, parseAllDocuments } from 'yaml';

const ROOT = fileURLToPath(new URL('../../..', import.meta.url));
const read = (file: string) => readFileSync(`${ROOT}/${file}`, 'utf8');
const pkg = JSON.parse(read('package.json')) as { name: string; version: string; license: string };

describe('the release files', () => {
  it('LICENSE is the licence package.json declares', () => {
    assert.equal(pkg.license, 'MIT');
    const licence = read('LICENSE');
    assert.match(licence, /^MIT License\n/);
    assert.match(licence, /THE SOFTWARE IS PROVIDED "AS IS", WITHOUT WARRANTY OF ANY KIND/);
  });

  it("CHANGELOG.md's newest entry is package.json's version", () => {
    const newest = /^## (\S+)/m.exec(read('CHANGELOG.md'))?.[1];
    assert.equal(newest, pkg.version);
  });

  it("the Dockerfile's VERSION, and so its OCI version label, is package.json's version", () => {
    const dockerfile = read('Dockerfile');
    assert.equal(/^ARG VERSION=(\S+)$/m.exec(dockerfile)?.[1], pkg.version);
    assert.match(dockerfile, /org\.opencontainers\.image\.version="\$\{VERSION\}"/);
    assert.match(dockerfile, /org\.opencontainers\.image\.licenses="MIT"/);
  });

  it("every Kubernetes workload runs the one image the kustomization tags with package.json's version", () => {
    const kustomization = parse(read('deploy/kubernetes/kustomization.yaml')) as {
      images: { name: string; newTag: string }[];
      resources: string[];
    };
    assert.deepEqual(
      kustomization.images.map((image) => [image.name, image.newTag]),
      [[pkg.name, pkg.version]],
    );
    const images = kustomization.resources.flatMap((resource) =>
      parseAllDocuments(read(`deploy/kubernetes/${resource}`)).flatMap((doc) => {
        const manifest = doc.toJS() as { spec?: { template?: { spec?: { containers?: { image: string }[] } } } };
        return (manifest.spec?.template?.spec?.containers ?? []).map((container) => container.image);
      }),
    );
    assert.ok(images.length >= 3, images.join(', '));
    assert.deepEqual(new Set(images), new Set([pkg.name]), 'a tag written in a manifest would escape the one place');
  });
});

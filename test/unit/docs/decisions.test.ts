// The decisions' index in docs/architecture.md and their pages under docs/decisions/, held to each
// other: every page is in the index and every index line names a page, with the page's own number
// and title, numbered 1..N once each. And every relative link of the documentation — docs/*.md,
// docs/decisions/*.md, README.md, test/README.md — reaches a file that exists and, when it names a #anchor in a
// markdown page, a heading of that page. File-system reads only.
import assert from 'node:assert/strict';
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../../..', import.meta.url));
const ARCHITECTURE = 'docs/architecture.md';
const DECISIONS = 'docs/decisions';
const INDEX = '## The decisions';

const read = (file: string) => readFileSync(path.join(ROOT, file), 'utf8');
const markdownIn = (dir: string) =>
  readdirSync(path.join(ROOT, dir))
    .filter((name) => name.endsWith('.md'))
    .sort()
    .map((name) => `${dir}/${name}`);

// ---- The index and the pages ------------------------------------------------------------------

interface IndexLine {
  number: number;
  title: string;
  file: string;
}

/** The lines of the index: `N. [Title](decisions/NN-title.md)`, one per decision. */
function indexLines(): IndexLine[] {
  const doc = read(ARCHITECTURE);
  const start = doc.indexOf(`\n${INDEX}\n`);
  assert.ok(start >= 0, `${ARCHITECTURE} has the section "${INDEX}"`);
  const end = doc.indexOf('\n## ', start + INDEX.length + 2);
  return doc
    .slice(start, end === -1 ? undefined : end)
    .split('\n')
    .flatMap((line) => {
      const match = /^(\d+)\. \[(.+)\]\(decisions\/([^)\s]+)\)$/.exec(line);
      return match ? [{ number: Number(match[1]), title: match[2]!, file: `${DECISIONS}/${match[3]!}` }] : [];
    });
}

/** A page's number and title, from its first line: `# N. Title`. */
function pageHeading(file: string): { number: number; title: string } | undefined {
  const match = /^# (\d+)\. (.+)\n/.exec(read(file));
  return match ? { number: Number(match[1]), title: match[2]! } : undefined;
}

describe('the decisions: the index in docs/architecture.md and one page each', () => {
  const lines = indexLines();
  const pages = markdownIn(DECISIONS);

  it('lists every page, and names only pages that exist', () => {
    assert.ok(lines.length >= 40, `the index lines are read (${lines.length})`);
    const listed = new Set(lines.map((line) => line.file));
    const unlisted = pages.filter((page) => !listed.has(page));
    assert.deepEqual(unlisted, [], `pages missing from the index: ${unlisted.join(', ')}`);
    const gone = lines.map((line) => line.file).filter((file) => !existsSync(path.join(ROOT, file)));
    assert.deepEqual(gone, [], `index lines naming no page: ${gone.join(', ')}`);
  });

  it('numbers the decisions 1..N, once each, in order', () => {
    assert.deepEqual(
      lines.map((line) => line.number),
      lines.map((_, i) => i + 1),
    );
  });

  it("gives each page the number and title of its index line, and the number in the page's name", () => {
    const wrong = lines
      .filter((line) => existsSync(path.join(ROOT, line.file)))
      .flatMap((line) => {
        const heading = pageHeading(line.file);
        const prefix = String(line.number).padStart(2, '0');
        return heading?.number === line.number &&
          heading.title === line.title &&
          path.basename(line.file).startsWith(`${prefix}-`)
          ? []
          : [`${line.file} (index: ${line.number}. ${line.title})`];
      });
    assert.deepEqual(wrong, [], `pages whose heading or name disagrees with the index: ${wrong.join('; ')}`);
  });

  it('leads from each page back to the map', () => {
    const lost = pages.filter((page) => !read(page).includes('](../architecture.md)'));
    assert.deepEqual(lost, [], `pages without a link to ../architecture.md: ${lost.join(', ')}`);
  });
});

// ---- Links ------------------------------------------------------------------------------------

/** A page without its fenced blocks, whose lines are neither headings nor links. */
const unfenced = (markdown: string) => markdown.replace(/^(`{3,}|~{3,})[^\n]*\n[\s\S]*?^\1[^\n]*$/gm, '');

/** The text a reader sees as prose: inline code removed too, so a link shown as code is none. */
const prose = (markdown: string) => unfenced(markdown).replace(/`+[^`\n]*`+/g, '');

/** The anchors of a page's headings, as GitHub makes them: a repeated heading gets -1, -2, … */
function anchors(file: string): Set<string> {
  const seen = new Map<string, number>();
  const found = new Set<string>();
  for (const [, text] of unfenced(read(file)).matchAll(/^#{1,6}[ \t]+(.+?)[ \t#]*$/gm)) {
    const base = text!
      .replace(/`/g, '')
      .replace(/!?\[([^\]]*)\]\([^)]*\)/g, '$1')
      .replace(/<[^>]+>/g, '')
      .toLowerCase()
      .replace(/[^\p{L}\p{M}\p{N}\p{Pc}\- ]/gu, '')
      .replace(/ /g, '-');
    const count = seen.get(base) ?? 0;
    seen.set(base, count + 1);
    found.add(count === 0 ? base : `${base}-${count}`);
  }
  return found;
}

/** Every inline link and image target of a page that is not a URL with a scheme. */
function relativeLinks(file: string): string[] {
  return [...prose(read(file)).matchAll(/!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)]
    .map(([, target]) => target!)
    .filter((target) => !/^[a-z][a-z0-9+.-]*:/i.test(target));
}

describe('the links of the documentation', () => {
  const pages = [...markdownIn('docs'), ...markdownIn(DECISIONS), 'README.md', 'test/README.md'];

  it('reach files that exist, and headings that exist where they name one', () => {
    let count = 0;
    const broken = pages.flatMap((page) =>
      relativeLinks(page).flatMap((link) => {
        count += 1;
        const [target, anchor] = link.split('#', 2) as [string, string | undefined];
        const file = target === '' ? page : path.posix.normalize(path.posix.join(path.posix.dirname(page), target));
        if (!existsSync(path.join(ROOT, decodeURIComponent(file)))) return [`${page}: ${link} (no such file)`];
        if (anchor === undefined || !file.endsWith('.md')) return [];
        return anchors(file).has(decodeURIComponent(anchor)) ? [] : [`${page}: ${link} (no such heading)`];
      }),
    );
    assert.ok(count >= 100, `the links are read (${count})`);
    assert.deepEqual(broken, [], `links that lead nowhere:\n${broken.join('\n')}`);
  });

  it('reads a heading the way GitHub anchors it', () => {
    assert.ok(anchors(ARCHITECTURE).has('the-map-of-the-root'));
    assert.ok(anchors(ARCHITECTURE).has('the-import-rules-lint-enforces'));
    assert.ok(anchors('docs/connectors.md').has('what-is-checked-2'), 'a third heading of one name ends -2');
  });
});

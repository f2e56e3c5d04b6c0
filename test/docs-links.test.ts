// The README and docs/*.md stay inside the repository: every relative link names a file that exists, no
// http(s) address leaves this machine (the product's own localhost addresses are fine), and the README stays a
// short user's page. Pure: no services.
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = join(import.meta.dirname, '..');
const PAGES = [
  join(ROOT, 'README.md'),
  ...readdirSync(join(ROOT, 'docs'))
    .filter((name) => name.endsWith('.md'))
    .map((name) => join(ROOT, 'docs', name)),
];
/** Paths a page may name in its text (`src/store/migrate.ts`): checked, so a move or rename cannot leave them stale. */
const TOP_FOLDERS = [
  'src',
  'producers',
  'workers',
  'scripts',
  'bin',
  'config',
  'test',
  'bench',
  'examples',
  'packages',
  'docs',
];
const LOCAL_HOSTS = /^https?:\/\/(localhost|127\.0\.0\.1|\[::1\]|0\.0\.0\.0)([:/]|$)/;

function withoutFences(markdown: string): string {
  return markdown.replace(/^(```|~~~)[^\n]*\n[\s\S]*?^\1[^\n]*$/gm, '');
}

/** The text a reader sees as prose: fenced blocks and code spans removed (they show commands, not links). */
function prose(markdown: string): string {
  return withoutFences(markdown).replace(/`[^`\n]*`/g, '');
}

/** Targets of inline links and images `[text](target)` and of reference definitions `[id]: target`. */
function linkTargets(markdown: string): string[] {
  const text = prose(markdown);
  const inline = [...text.matchAll(/\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)].map((m) => m[1]!);
  const references = [...text.matchAll(/^\s*\[[^\]]+\]:\s*<?(\S+?)>?(?:\s|$)/gm)].map((m) => m[1]!);
  return [...inline, ...references];
}

/** `#Some heading` → the anchor GitHub gives it. */
function anchorsOf(markdown: string): Set<string> {
  const headings = withoutFences(markdown)
    .replace(/`([^`\n]*)`/g, '$1')
    .split('\n')
    .filter((line) => /^#{1,6} /.test(line));
  return new Set(
    headings.map((line) =>
      line
        .replace(/^#+ /, '')
        .trim()
        .toLowerCase()
        .replace(/[^\p{L}\p{N} _-]/gu, '')
        .replace(/ /g, '-'),
    ),
  );
}

describe('README.md and docs/*.md', () => {
  it('reads some pages (the scan works)', () => {
    expect(PAGES.length).toBeGreaterThan(10);
    expect(linkTargets('see [a](docs/a.md#x)\n[b]: b.md\n`[c](c.md)`')).toEqual(['docs/a.md#x', 'b.md']);
  });

  it('link only to files of the repository that exist, and to headings those files have', () => {
    const broken: string[] = [];
    for (const page of PAGES) {
      const markdown = readFileSync(page, 'utf8');
      for (const target of linkTargets(markdown)) {
        if (/^[a-z][a-z0-9+.-]*:/i.test(target)) continue; // absolute: the next test's business
        const [path, anchor] = target.split('#') as [string, string | undefined];
        const file = path === '' ? page : join(dirname(page), decodeURIComponent(path));
        const where = `${relative(ROOT, page)}: ${target}`;
        if (!file.startsWith(ROOT + '/') && file !== ROOT) broken.push(`${where} (outside the repository)`);
        else if (!existsSync(file)) broken.push(`${where} (no such file)`);
        else if (anchor && file.endsWith('.md') && statSync(file).isFile()) {
          if (!anchorsOf(readFileSync(file, 'utf8')).has(anchor)) broken.push(`${where} (no such heading)`);
        }
      }
    }
    expect(broken).toEqual([]);
  });

  it('carry no http(s) address but the localhost ones the product serves', () => {
    const outside: string[] = [];
    for (const page of PAGES) {
      const text = prose(readFileSync(page, 'utf8'));
      for (const match of text.matchAll(/https?:\/\/[^\s)>\]"'`]+/gi)) {
        if (!LOCAL_HOSTS.test(match[0])) outside.push(`${relative(ROOT, page)}: ${match[0]}`);
      }
      for (const target of linkTargets(readFileSync(page, 'utf8'))) {
        if (/^[a-z][a-z0-9+.-]*:/i.test(target) && !LOCAL_HOSTS.test(target))
          outside.push(`${relative(ROOT, page)}: ${target}`);
      }
    }
    expect([...new Set(outside)]).toEqual([]);
  });

  it('name only files and folders of the repository that exist', () => {
    const missing: string[] = [];
    const path = new RegExp(
      String.raw`(?<![\w/.-])((?:${TOP_FOLDERS.join('|')})/[\w./-]*[\w/])(?![\w*<{-])`,
      'g',
    );
    for (const page of PAGES) {
      for (const match of withoutFences(readFileSync(page, 'utf8')).matchAll(path)) {
        if (!existsSync(join(ROOT, match[1]!))) missing.push(`${relative(ROOT, page)}: ${match[1]}`);
      }
    }
    expect([...new Set(missing)]).toEqual([]);
  });

  it('are all listed in the index, docs/README.md', () => {
    const index = new Set(
      linkTargets(readFileSync(join(ROOT, 'docs', 'README.md'), 'utf8')).map((t) => t.split('#')[0]),
    );
    const pages = PAGES.filter((page) => page.startsWith(join(ROOT, 'docs') + '/')).map((page) =>
      relative(join(ROOT, 'docs'), page),
    );
    expect(pages.filter((page) => page !== 'README.md' && !index.has(page))).toEqual([]);
  });

  it('keep the README a user page, well under 10 KB', () => {
    const bytes = statSync(join(ROOT, 'README.md')).size;
    expect(bytes, `README.md is ${bytes} bytes`).toBeLessThan(10_000);
  });

  it('never send a reader outside the repository for an interface', () => {
    const mentions = PAGES.flatMap((page) =>
      readFileSync(page, 'utf8')
        .split('\n')
        .filter((line) => /CONTRACT(\.md| §)|\.\.\/shared/.test(line))
        .map((line) => `${relative(ROOT, page)}: ${line.trim().slice(0, 80)}`),
    );
    expect(mentions).toEqual([]);
  });
});

// The modules a source file reaches through its imports, read with the TypeScript parser (no build): the
// packages (and node: built-ins) reached, each with the chain of files that leads to it. `runtime` follows only
// the imports that survive compilation (verbatimModuleSyntax drops `import type` and `export type`, and keeps
// every other declaration, even `import { type X }`, as an import); `types` follows every import, as a
// declaration file a consumer type-checks would.
import { existsSync, readFileSync } from 'node:fs';
import { dirname, relative, resolve } from 'node:path';
import ts from 'typescript';

export type ImportKind = 'runtime' | 'types';

export interface ReachedPackage {
  /** The package name (`mysql2`, `@bull-board/api`) or the built-in (`node:net`). */
  name: string;
  /** The files from the entry to the one importing it, relative to `root`. */
  chain: string[];
}

export interface ImportGraph {
  files: string[];
  packages: ReachedPackage[];
}

function specifiers(file: string, kind: ImportKind): string[] {
  const source = ts.createSourceFile(file, readFileSync(file, 'utf8'), ts.ScriptTarget.Latest, true);
  const found: string[] = [];
  const visit = (node: ts.Node): void => {
    if (ts.isImportDeclaration(node) && ts.isStringLiteral(node.moduleSpecifier)) {
      if (kind === 'types' || !node.importClause?.isTypeOnly) found.push(node.moduleSpecifier.text);
    } else if (
      ts.isExportDeclaration(node) &&
      node.moduleSpecifier &&
      ts.isStringLiteral(node.moduleSpecifier)
    ) {
      if (kind === 'types' || !node.isTypeOnly) found.push(node.moduleSpecifier.text);
    } else if (
      ts.isCallExpression(node) &&
      node.expression.kind === ts.SyntaxKind.ImportKeyword &&
      node.arguments[0] &&
      ts.isStringLiteral(node.arguments[0])
    ) {
      found.push(node.arguments[0].text);
    } else if (kind === 'types' && ts.isImportTypeNode(node)) {
      const literal = ts.isLiteralTypeNode(node.argument) ? node.argument.literal : undefined;
      if (literal && ts.isStringLiteral(literal)) found.push(literal.text);
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return found;
}

function packageName(specifier: string): string {
  if (specifier.startsWith('node:')) return specifier;
  const parts = specifier.split('/');
  return specifier.startsWith('@') ? parts.slice(0, 2).join('/') : parts[0]!;
}

/** A relative specifier as the source file it names (`./x.js` is `./x.ts`); undefined for a non-code file. */
function sourceFileOf(from: string, specifier: string): string | undefined {
  const target = resolve(dirname(from), specifier);
  const candidates = [target.replace(/\.js$/, '.ts'), `${target}.ts`, resolve(target, 'index.ts'), target];
  return candidates.find((path) => path.endsWith('.ts') && existsSync(path));
}

/** The source files of the project a file imports (its relative imports, as source files). */
export function localImports(file: string, kind: ImportKind): string[] {
  return specifiers(file, kind)
    .filter((specifier) => specifier.startsWith('.'))
    .map((specifier) => sourceFileOf(file, specifier))
    .filter((target): target is string => target !== undefined);
}

export function importGraph(entry: string, kind: ImportKind, root = process.cwd()): ImportGraph {
  const parent = new Map<string, string>();
  const seen = new Set<string>();
  const packages = new Map<string, string>();
  const pending = [resolve(root, entry)];
  while (pending.length > 0) {
    const file = pending.pop()!;
    if (seen.has(file)) continue;
    seen.add(file);
    for (const specifier of specifiers(file, kind)) {
      if (specifier.startsWith('.')) {
        const target = sourceFileOf(file, specifier);
        if (!target || seen.has(target)) continue;
        if (!parent.has(target)) parent.set(target, file);
        pending.push(target);
      } else if (!packages.has(packageName(specifier))) {
        packages.set(packageName(specifier), file);
      }
    }
  }
  const chain = (file: string): string[] => {
    const files: string[] = [];
    for (let at: string | undefined = file; at; at = parent.get(at)) files.unshift(relative(root, at));
    return files;
  };
  return {
    files: [...seen].map((file) => relative(root, file)).sort(),
    packages: [...packages].map(([name, file]) => ({ name, chain: chain(file) })),
  };
}

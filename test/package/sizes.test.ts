/**
 * The sizes lib/ keeps so that a room can be read whole: no file over 400
 * lines, no function or method over 60, and the store's facade (RelayStore)
 * at most 250, since it only routes to its wings (docs/architecture.md). A
 * function is measured from its first token (its doc comment not counted) to
 * its closing brace, with the TypeScript compiler's own parse, so nested
 * functions and arrow functions count too. When one fails, split it by job.
 */
import assert from 'node:assert/strict';
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { test } from 'node:test';
import ts from 'typescript';
import { ROOT } from '../support/helpers.js';

const MAX_FILE_LINES = 400;
const MAX_FUNCTION_LINES = 60;
const MAX_FACADE_LINES = 250;

interface Measured {
  /** `file:line name` */
  where: string;
  lines: number;
}

async function libSources(): Promise<string[]> {
  const entries = await readdir(path.join(ROOT, 'lib'), { withFileTypes: true, recursive: true });
  return entries
    .filter((e) => e.isFile() && e.name.endsWith('.ts'))
    .map((e) => path.relative(ROOT, path.join(e.parentPath, e.name)))
    .sort();
}

function lineCount(text: string): number {
  return text.split('\n').length - (text.endsWith('\n') ? 1 : 0);
}

/** What a function is called where it is written: its own name, or the name it is assigned to. */
function nameOf(node: ts.FunctionLikeDeclaration, source: ts.SourceFile): string {
  if (node.name) return node.name.getText(source);
  const parent = node.parent;
  if (ts.isVariableDeclaration(parent) || ts.isPropertyAssignment(parent) || ts.isPropertyDeclaration(parent)) return parent.name.getText(source);
  return '(anonymous)';
}

/** Every function, method, accessor and class in one source, with its length in lines. */
function measure(file: string, text: string): { functions: Measured[]; classes: Measured[] } {
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true);
  const lineOf = (pos: number) => source.getLineAndCharacterOfPosition(pos).line;
  const functions: Measured[] = [];
  const classes: Measured[] = [];
  const visit = (node: ts.Node): void => {
    const start = () => lineOf(node.getStart(source));
    const lines = () => lineOf(node.end) - start() + 1;
    if (ts.isFunctionLike(node) && 'body' in node && node.body) {
      functions.push({ where: `${file}:${start() + 1} ${nameOf(node as ts.FunctionLikeDeclaration, source)}`, lines: lines() });
    }
    if (ts.isClassDeclaration(node)) classes.push({ where: `${file}:${start() + 1} ${node.name?.text ?? '(anonymous)'}`, lines: lines() });
    ts.forEachChild(node, visit);
  };
  visit(source);
  return { functions, classes };
}

async function measureLib(): Promise<{ files: Measured[]; functions: Measured[]; classes: Measured[] }> {
  const files: Measured[] = [];
  const functions: Measured[] = [];
  const classes: Measured[] = [];
  for (const file of await libSources()) {
    const text = await readFile(path.join(ROOT, file), 'utf8');
    files.push({ where: file, lines: lineCount(text) });
    const found = measure(file, text);
    functions.push(...found.functions);
    classes.push(...found.classes);
  }
  return { files, functions, classes };
}

const over = (items: Measured[], limit: number) => items.filter((m) => m.lines > limit).map((m) => `${m.where}: ${m.lines} lines`);

test('the measure counts a function from its first token to its closing brace, nested and arrow functions too', () => {
  const body = Array.from({ length: 59 }, (_, i) => `  const v${i} = ${i};`).join('\n');
  const text = `/** not counted */\nexport function long(): void {\n${body}\n}\nconst inner = () => {\n  return () => 1;\n};\n`;
  const { functions } = measure('x.ts', text);
  assert.deepEqual(functions.map((f) => [f.where, f.lines]), [['x.ts:2 long', 61], ['x.ts:63 inner', 3], ['x.ts:64 (anonymous)', 1]]);
  assert.deepEqual(over(functions, MAX_FUNCTION_LINES), ['x.ts:2 long: 61 lines']);
});

test(`no file in lib/ is over ${MAX_FILE_LINES} lines, no function over ${MAX_FUNCTION_LINES}, and RelayStore is at most ${MAX_FACADE_LINES}`, async () => {
  const { files, functions, classes } = await measureLib();
  assert.ok(files.length > 100 && functions.length > 1000, `lib/ read whole: ${files.length} files, ${functions.length} functions`);
  assert.deepEqual(over(files, MAX_FILE_LINES), []);
  assert.deepEqual(over(functions, MAX_FUNCTION_LINES), []);
  const facade = classes.filter((c) => c.where.startsWith('lib/store/store.ts:') && c.where.endsWith(' RelayStore'));
  assert.equal(facade.length, 1, 'RelayStore is in lib/store/store.ts');
  assert.deepEqual(over(facade, MAX_FACADE_LINES), []);
});

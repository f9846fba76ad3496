import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll } from 'vitest';

// Each test file imports this module afresh (vitest isolates files), so this hook runs after
// the importing file's tests and removes every directory they asked for.
const dirs: string[] = [];
afterAll(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

/** The path of `name` in a fresh temporary directory, written with `content` when given; removed after the test file. */
export function tempFile(prefix: string, name: string, content?: string): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  dirs.push(dir);
  const file = join(dir, name);
  if (content !== undefined) writeFileSync(file, content);
  return file;
}

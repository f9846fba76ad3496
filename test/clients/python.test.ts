import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const PYTHON_CLIENT = fileURLToPath(new URL('../../clients/python', import.meta.url));

function python(args: string[]): Promise<{ code: number; output: string }> {
  return new Promise((resolve) => {
    execFile(
      'python3',
      args,
      {
        cwd: PYTHON_CLIENT,
        // The Python tests start `tally serve` with this very Node.
        env: { ...process.env, TALLY_NODE: process.execPath, PYTHONDONTWRITEBYTECODE: '1' },
        timeout: 300_000,
        maxBuffer: 16 * 1024 * 1024,
      },
      (error, stdout, stderr) => {
        const code = error ? (typeof error.code === 'number' ? error.code : -1) : 0;
        resolve({ code, output: `${stdout}${stderr}` });
      },
    );
  });
}

// `npm test` (and so CI) runs the Python client's own suite, against a real tally serve.
describe('the Python client', () => {
  it('compiles (python3 -m compileall)', async () => {
    const result = await python(['-m', 'compileall', '-q', 'tally', 'tests']);
    expect(result.code, result.output).toBe(0);
  });

  it('parses as Python 3.9 (the oldest it supports)', async () => {
    const check =
      'import ast, pathlib\n' +
      "for p in sorted(pathlib.Path('.').rglob('*.py')):\n" +
      "    ast.parse(p.read_text(encoding='utf-8'), str(p), feature_version=(3, 9))\n";
    const result = await python(['-c', check]);
    expect(result.code, result.output).toBe(0);
  });

  it('passes its unittest suite against a real tally serve', { timeout: 330_000 }, async () => {
    const result = await python(['-m', 'unittest', 'discover', '-s', 'tests', '-t', '.', '-v']);
    expect(result.code, result.output).toBe(0);
    const ran = Number(/^Ran (\d+) tests? in/m.exec(result.output)?.[1] ?? 0);
    expect(ran, result.output).toBeGreaterThan(0);
    expect(result.output).toMatch(/^OK\b/m);
  });
});

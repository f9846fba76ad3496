import { execFile } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, normalize } from 'node:path';
import { describe, expect, it } from 'vitest';
import { BUILTIN_TASK_TYPES } from '../../src/catalogue/builtins.js';
import { newWebhookSecret, signDelivery } from '../../src/webhooks/signing.js';
import { tempFile } from '../support/temp.js';
import { anchors, codeBlocks, PAGES, read, ROOT } from './markdown.js';

function run(command: string, args: string[], env: Record<string, string>) {
  return new Promise<{ code: number; output: string }>((resolve) => {
    execFile(command, args, { env: { ...process.env, ...env }, timeout: 30_000 }, (error, stdout, stderr) => {
      resolve({
        code: error ? (typeof error.code === 'number' ? error.code : -1) : 0,
        output: stdout + stderr,
      });
    });
  });
}

function onlyBlock(page: string, language: string): string {
  const blocks = codeBlocks(page).filter((b) => b.language === language);
  expect(blocks, `${page} has one ${language} block`).toHaveLength(1);
  return blocks[0]?.code ?? '';
}

describe('the README and docs/', () => {
  it('link only to files and headings that exist', () => {
    for (const page of PAGES) {
      const text = read(page).replace(/^```[\s\S]*?^```$/gm, '');
      for (const [, target] of text.matchAll(/\]\(([^)\s]+)\)/g)) {
        if (!target || /^[a-z]+:/.test(target)) continue;
        const [path = '', anchor] = target.split('#');
        const file = path === '' ? page : normalize(join(dirname(page), path));
        expect(existsSync(join(ROOT, file)), `${page} links to ${target}`).toBe(true);
        if (anchor !== undefined && file.endsWith('.md'))
          expect(anchors(file).has(anchor), `${page} links to ${target}`).toBe(true);
      }
    }
  });

  it('name no issue numbers', () => {
    for (const page of PAGES) expect(read(page), page).not.toMatch(/\bissue ?#?[0-9]+/i);
  });

  it('document every variable src/config.ts reads, and only variables something reads', () => {
    const config = readFileSync(join(ROOT, 'src/config.ts'), 'utf8');
    const names = new Set([...config.matchAll(/\b(TALLY_[A-Z_]+)\b/g)].map((m) => m[1]));
    const doc = read('docs/configuration.md');
    for (const name of names) expect(doc, `docs/configuration.md names ${name}`).toContain(`\`${name}\``);
    const sources = ['src', 'test', 'bench']
      .flatMap((dir) => [...readdirRecursive(join(ROOT, dir))])
      .map((file) => readFileSync(file, 'utf8'))
      .join('\n');
    for (const [, name] of doc.matchAll(/`(TALLY_[A-Z_]+)`/g))
      expect(sources, `${name} is read somewhere`).toContain(name);
  });

  it('list the 50 built-in task types with their baselines', () => {
    const rows = [
      ...read('docs/task-types.md').matchAll(/^\| `([a-z_]+)`\s*\| (\w+)\s*\| (.+?)\s*\| (\d+)\s*\|$/gm),
    ].map((m) => ({
      key: m[1],
      category: m[2],
      display_name: m[3],
      default_baseline_minutes: Number(m[4]),
    }));
    expect(rows).toEqual(BUILTIN_TASK_TYPES.map((t) => ({ ...t })));
  });

  it('show client examples that the clients’ own READMEs run', () => {
    const readme = codeBlocks('README.md');
    const ts = readme.filter((b) => b.language === 'ts');
    const py = readme.filter((b) => b.language === 'python');
    expect(ts.length + py.length).toBeGreaterThan(0);
    const tsClient = codeBlocks('clients/typescript/README.md').map((b) => b.code);
    const pyClient = codeBlocks('clients/python/README.md').map((b) => b.code);
    for (const block of ts) expect(tsClient, `README.md:${block.line}`).toContain(block.code);
    for (const block of py) expect(pyClient, `README.md:${block.line}`).toContain(block.code);
  });
});

describe('the signature verification examples of docs/webhooks.md', () => {
  const secret = newWebhookSecret();
  const body = JSON.stringify({ id: 'whmsg_1', type: 'test.ping', created_at: '…', data: { message: 'é' } });
  const now = new Date();
  const header = (at: Date, signed = body) =>
    signDelivery({ secret, messageId: 'whmsg_1', body: signed, at })['X-Tally-Signature'];
  // [raw body, X-Tally-Signature, secret] and whether the example must accept it.
  const cases: Array<[[string, string, string], boolean]> = [
    [[body, header(now), secret], true],
    [[`${body} `, header(now), secret], false],
    [[body, header(now, `${body} `), secret], false],
    [[body, header(now), newWebhookSecret()], false],
    [[body, header(new Date(now.getTime() - 10 * 60_000)), secret], false],
    [[body, 't=1,v1=zz', secret], false],
  ];
  const expected = cases.map(([, ok]) => ok);
  const env = { CASES: JSON.stringify(cases.map(([input]) => input)) };

  it('in JavaScript accept what Tally signs and refuse the rest', async () => {
    const harness =
      '\nconst cases = JSON.parse(process.env.CASES);\n' +
      'console.log(JSON.stringify(cases.map(([b, h, s]) => verifyTally(b, h, s))));\n';
    const file = tempFile('tally-verify-', 'verify.mjs', onlyBlock('docs/webhooks.md', 'js') + harness);
    const result = await run(process.execPath, [file], env);
    expect(result.code, result.output).toBe(0);
    expect(JSON.parse(result.output)).toEqual(expected);
  });

  it('in Python accept what Tally signs and refuse the rest', async () => {
    const harness =
      '\nimport json, os\n' +
      'cases = json.loads(os.environ["CASES"])\n' +
      'print(json.dumps([verify_tally(b.encode(), h, s) for b, h, s in cases]))\n';
    const file = tempFile('tally-verify-', 'verify.py', onlyBlock('docs/webhooks.md', 'python') + harness);
    const result = await run('python3', [file], env);
    expect(result.code, result.output).toBe(0);
    expect(JSON.parse(result.output)).toEqual(expected);
  });
});

function* readdirRecursive(dir: string): Generator<string> {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) yield* readdirRecursive(path);
    else if (/\.(ts|js|mjs)$/.test(entry.name)) yield path;
  }
}

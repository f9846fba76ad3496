import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createChildDatabase, type ChildDatabase } from '../support/child-process.js';
import { ENGINES } from '../support/engines.js';
import { printedApiKey, serveChild, type ServedChild } from '../support/serve.js';
import { codeBlocks, PAGES, type CodeBlock } from './markdown.js';

// Every ```sh block with a curl in the README and docs/ runs, in page order, against a real
// `tally serve` with TALLY_URL and TALLY_API_KEY set (and EVENT_ID and WEBHOOK_ID, which the docs
// say where they come from). curl fails on any 4xx or 5xx, so a broken example fails its test. A
// block that cannot run says so, with its reason, in `<!-- example: not run: REASON -->` above it.
const EXAMPLES: CodeBlock[] = PAGES.flatMap(codeBlocks).filter(
  (b) => b.language === 'sh' && /\bcurl\b/.test(b.code),
);
const RUNNABLE = EXAMPLES.filter((b) => b.notRun === null);

const PRELUDE = [
  'set -euo pipefail',
  // Each answer on a line of its own, and a 4xx or 5xx fails the block (with its body shown).
  'curl() { command curl --silent --show-error --fail-with-body "$@"; printf "\\n"; }',
].join('\n');

function runBlock(code: string, cwd: string, env: Record<string, string>) {
  return new Promise<{ code: number; stdout: string; stderr: string }>((resolve) => {
    execFile(
      'bash',
      ['--norc', '--noprofile', '-c', `${PRELUDE}\n${code}`],
      { cwd, env: { PATH: process.env.PATH ?? '/usr/bin:/bin', ...env }, timeout: 30_000 },
      (error, stdout, stderr) => {
        const exit = error ? (typeof error.code === 'number' ? error.code : -1) : 0;
        resolve({ code: exit, stdout, stderr });
      },
    );
  });
}

async function post(served: ServedChild, key: string, path: string, body: unknown): Promise<unknown> {
  const res = await fetch(`${served.base}${path}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  if (res.status !== 201) throw new Error(`${path} answered ${res.status}: ${await res.text()}`);
  return res.json();
}

describe('the curl examples of the README and docs/', () => {
  it('are found on the pages that show the API', () => {
    const pages = new Set(RUNNABLE.map((b) => b.page));
    for (const page of [
      'README.md',
      'docs/api.md',
      'docs/reports.md',
      'docs/task-types.md',
      'docs/webhooks.md',
    ])
      expect(pages, page).toContain(page);
  });

  it('are either run or marked, with a reason, as not run', () => {
    for (const block of EXAMPLES.filter((b) => b.notRun !== null))
      expect(block.notRun, `${block.page}:${block.line}`).not.toBe('');
  });
});

describe.each(ENGINES)('the curl examples against tally serve (%s)', (engine) => {
  let database: ChildDatabase;
  let served: ServedChild;
  let cwd: string;
  let env: Record<string, string>;

  beforeAll(async () => {
    database = await createChildDatabase(engine);
    // TALLY_ROLE=api: the examples' webhook points at hooks.example.com, which no worker should
    // try to reach from a test; reports stay exact without a folding stage (they read the tail),
    // and without a stage to wait for, batches must not wait for one either.
    served = await serveChild({
      TALLY_DATABASE_URL: database.url,
      TALLY_ROLE: 'api',
      TALLY_INGEST_MAX_LAG_SECONDS: '0',
    });
    const apiKey = printedApiKey(served);
    const event = (await post(served, apiKey, '/v1/track', {
      agent_id: 'contract-reviewer',
      task_type: 'legal_nda_review',
      outcome: 'success',
    })) as { event_id: string };
    const webhook = (await post(served, apiKey, '/v1/webhooks', {
      url: 'https://hooks.example.com/docs',
      event_types: ['event.created'],
    })) as { id: string };
    cwd = mkdtempSync(join(tmpdir(), 'tally-docs-'));
    env = { TALLY_URL: served.base, TALLY_API_KEY: apiKey, EVENT_ID: event.event_id, WEBHOOK_ID: webhook.id };
  }, 60_000);

  afterAll(async () => {
    if (served?.alive()) {
      served.child.kill('SIGTERM');
      await served.exited;
    }
    await database?.destroy();
    if (cwd) rmSync(cwd, { recursive: true, force: true });
  });

  for (const block of RUNNABLE) {
    it(`${block.page}:${block.line}`, async () => {
      const result = await runBlock(block.code, cwd, env);
      const report = `${block.code}\n--- stdout\n${result.stdout}\n--- stderr\n${result.stderr}`;
      expect(result.code, report).toBe(0);
      expect(result.stderr, report).toBe('');
      expect(result.stdout.trim(), report).not.toBe('');
      for (const line of result.stdout.split('\n').filter((l) => /^[[{]/.test(l))) {
        const body = JSON.parse(line) as unknown;
        expect(body && typeof body === 'object' && 'error' in body, report).toBe(false);
      }
    });
  }
});

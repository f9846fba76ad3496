import { createServer } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import {
  EnvironmentError,
  browserTestFiles,
  environmentLine,
  findRedis,
  runNeedsBrowser,
} from '../support/test-environment.js';

const ROOT = process.cwd();

describe('what npm test finds before the test files run', () => {
  const saved = process.env.TALLY_TEST_REDIS_URL;
  afterEach(() => {
    if (saved === undefined) delete process.env.TALLY_TEST_REDIS_URL;
    else process.env.TALLY_TEST_REDIS_URL = saved;
  });

  it('knows the browser test files, and which filtered runs need Chromium', () => {
    const files = browserTestFiles(ROOT);
    expect(files).toContain('test/dashboard/e2e/pages.test.ts');
    expect(files.every((f) => f.includes('/e2e/'))).toBe(true);
    expect(runNeedsBrowser(ROOT, undefined)).toBe(true);
    expect(runNeedsBrowser(ROOT, [])).toBe(true);
    expect(runNeedsBrowser(ROOT, ['test/dashboard'])).toBe(true);
    expect(runNeedsBrowser(ROOT, ['pages.test'])).toBe(true);
    expect(runNeedsBrowser(ROOT, ['test/http/errors.test.ts'])).toBe(false);
  });

  it('stops on a named service that does not answer, naming the variable', async () => {
    const server = createServer();
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as { port: number };
    await new Promise<void>((resolve) => server.close(() => resolve()));
    process.env.TALLY_TEST_REDIS_URL = `redis://127.0.0.1:${port}`;
    const found = findRedis();
    await expect(found).rejects.toBeInstanceOf(EnvironmentError);
    await expect(found).rejects.toThrow(/TALLY_TEST_REDIS_URL=redis:\/\/127\.0\.0\.1:\d+ does not answer/);
  });

  it('says in one line which engines and services it uses and what it left out, and why', () => {
    const line = environmentLine(
      [
        {
          name: 'PostgreSQL',
          url: null,
          reason: 'nothing answers at postgres://postgres@127.0.0.1:5432/test',
        },
        { name: 'Redis', url: 'redis://127.0.0.1:6379' },
      ],
      '/usr/bin/chromium',
    );
    expect(line).toBe(
      'tests: engines SQLite only; using Redis (redis://127.0.0.1:6379), Chromium (/usr/bin/chromium); ' +
        'left out PostgreSQL: nothing answers at postgres://postgres@127.0.0.1:5432/test.',
    );
    expect(line).not.toContain('\n');
    const both = environmentLine([{ name: 'PostgreSQL', url: 'postgres://u:secret@db/x' }], null);
    expect(both).toBe(
      'tests: engines SQLite and PostgreSQL (postgres://u:***@db/x); using no other service.',
    );
  });
});

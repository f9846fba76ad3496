/**
 * npm run bench:compare — the reports of bench:reports, served by this checkout and by another
 * one (BENCH_AGAINST, the path of a checkout of an earlier commit with its node_modules), run
 * in one process and interleaved query by query (this, that, that, this…), so that whatever else
 * the machine does slows both alike. Prints each report's p50 in the other checkout and the
 * ratio this ÷ that, then the median ratio over all reports.
 *
 * Each side reads its own database as bench:reports kept it (BENCH_KEEP=1), seeded and migrated
 * by its own code, so the two layouts may differ:
 *   (cd $BENCH_AGAINST && BENCH_KEEP=1 TALLY_BENCH_POSTGRES_URL=…/that TMPDIR=/tmp/that npm run bench:reports)
 *   BENCH_KEEP=1 TALLY_BENCH_POSTGRES_URL=…/this npm run bench:reports
 *   BENCH_AGAINST=… BENCH_AGAINST_POSTGRES_URL=…/that BENCH_AGAINST_TMPDIR=/tmp/that \
 *     TALLY_BENCH_POSTGRES_URL=…/this npm run bench:compare
 * BENCH_EVENTS and BENCH_SHAPE name the kept databases as in bench:reports; BENCH_ENGINES picks
 * the engines (default both); BENCH_RUNS the runs of each report on each side (default 30);
 * BENCH_CASES=REGEX the reports.
 */
import { join, resolve } from 'node:path';
import { tmpdir } from 'node:os';
import { existsSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import { CASES, NOW } from './report-cases.js';

type Engine = 'sqlite' | 'postgres';

const AGAINST = process.env.BENCH_AGAINST;
if (AGAINST === undefined) {
  console.error('BENCH_AGAINST: the path of the other checkout to compare with');
  process.exit(2);
}
const EVENTS = Number(process.env.BENCH_EVENTS ?? 1_000_000);
const SHAPE = process.env.BENCH_SHAPE ?? 'specialised';
const RUNS = Number(process.env.BENCH_RUNS ?? 30);
const ONLY = process.env.BENCH_CASES ? new RegExp(process.env.BENCH_CASES) : null;
const KEPT = `${SHAPE}_${EVENTS}`;
const ENGINES = (process.env.BENCH_ENGINES ?? 'sqlite,postgres').split(',') as Engine[];

interface Side {
  name: string;
  root: string;
  postgresUrl: string;
  tmp: string;
}

const sides: Side[] = [
  {
    name: 'this',
    root: resolve(import.meta.dirname, '..'),
    postgresUrl: process.env.TALLY_BENCH_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/test',
    tmp: tmpdir(),
  },
  {
    name: 'that',
    root: resolve(AGAINST),
    postgresUrl: process.env.BENCH_AGAINST_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/test',
    tmp: process.env.BENCH_AGAINST_TMPDIR ?? tmpdir(),
  },
];

/** Runs one report on a side; its modules are that checkout's own. */
type Runner = { run: (input: unknown) => Promise<unknown>; close: () => Promise<void> };

async function open(side: Side, engine: Engine): Promise<Runner> {
  const module = (path: string) => import(join(side.root, path));
  const [reports, storageModule, clockModule, configModule, orgs] = await Promise.all([
    module('src/reports/report.ts'),
    module('src/storage/db.ts'),
    module('src/clock.ts'),
    module('src/config.ts'),
    module('src/orgs/organizations.ts'),
  ]);
  let storage;
  if (engine === 'sqlite') {
    const file = join(side.tmp, `tally-bench-reports-keep-${KEPT}`, 'tally.db');
    if (!existsSync(file)) throw new Error(`${side.name}: no kept SQLite database at ${file}`);
    storage = storageModule.openStorage(`sqlite:${file}`);
  } else {
    storage = storageModule.openStorage(side.postgresUrl, {
      schema: `bench_reports_keep_${KEPT}`,
      poolSize: 4,
    });
  }
  const base = {
    db: storage.db,
    storage,
    engine,
    clock: new clockModule.ManualClock(NOW),
    config: configModule.loadConfig({ TALLY_LOG_LEVEL: 'silent' }),
  };
  const bench = await storage.db
    .selectFrom('organizations')
    .select('id')
    .where('name', '=', 'Bench')
    .executeTakeFirst();
  if (bench === undefined)
    throw new Error(`${side.name}: the kept ${engine} database has no Bench organisation`);
  const ctx = { ...base, org: await orgs.getOrganization({ ctx: base, id: bench.id }), actorKeyId: null };
  return {
    run: (input) => reports.buildReport({ ctx, input }),
    close: () => storage.close(),
  };
}

const median = (values: number[]) =>
  [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] as number;

for (const engine of ENGINES) {
  const [here, there] = [await open(sides[0] as Side, engine), await open(sides[1] as Side, engine)];
  console.log(`\n## ${engine}: ${EVENTS.toLocaleString('en')} events, this checkout against ${AGAINST}`);
  console.log('| query | that p50 ms | this p50 ms | this ÷ that |');
  console.log('|---|---:|---:|---:|');
  const ratios: number[] = [];
  try {
    for (const c of CASES) {
      if (ONLY !== null && !ONLY.test(c.label)) continue;
      await here.run(c.input);
      await there.run(c.input);
      const times = { here: [] as number[], there: [] as number[] };
      for (let i = 0; i < RUNS; i++) {
        const order: Array<[Runner, number[]]> = [
          [here, times.here],
          [there, times.there],
        ];
        if (i % 2 === 1) order.reverse();
        for (const [side, into] of order) {
          const started = performance.now();
          await side.run(c.input);
          into.push(performance.now() - started);
        }
      }
      const ratio = median(times.here) / median(times.there);
      ratios.push(ratio);
      console.log(
        `| ${c.label} | ${median(times.there).toFixed(1)} | ${median(times.here).toFixed(1)} | ${ratio.toFixed(2)} |`,
      );
    }
    const sorted = [...ratios].sort((a, b) => a - b);
    console.log(
      `\nthis ÷ that over ${ratios.length} reports: median ${median(ratios).toFixed(2)}, from ${sorted[0]?.toFixed(2)} to ${sorted.at(-1)?.toFixed(2)}`,
    );
  } finally {
    await here.close();
    await there.close();
  }
}

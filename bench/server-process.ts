import { spawn, type ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';

/** A benchmark server (bench/servers.ts) in a process of its own, with its organisation's key. */
export interface ServerProcess {
  child: ChildProcess;
  apiKey: string;
}

/**
 * Starts `bench/servers.ts KIND PORT` and resolves once it prints its ready line. With
 * BENCH_PROFILE_DIR set, the server writes a V8 CPU profile of each of its threads there when it
 * exits (open it in Chrome's DevTools, Performance tab).
 */
export function startServer(kind: string, port: number): Promise<ServerProcess> {
  const profile = process.env.BENCH_PROFILE_DIR;
  const flags = profile ? ['--cpu-prof', `--cpu-prof-dir=${profile}`] : [];
  const child = spawn(
    process.execPath,
    [...flags, '--import', 'tsx', 'bench/servers.ts', kind, String(port)],
    {
      stdio: ['ignore', 'pipe', 'inherit'],
    },
  );
  return new Promise((resolve, reject) => {
    const lines = createInterface({ input: child.stdout as NodeJS.ReadableStream });
    lines.once('line', (line) => resolve({ child, apiKey: (JSON.parse(line) as { apiKey: string }).apiKey }));
    child.once('exit', (code) => reject(new Error(`${kind} server exited with ${code}`)));
  });
}

/** The value of the unlabelled metric `name` in a /metrics text (NaN when absent). */
export function metricValue(text: string, name: string): number {
  const line = text.split('\n').find((l) => l.startsWith(`${name} `));
  return Number(line?.split(' ')[1] ?? NaN);
}

import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { Command } from 'commander';
import { describe, expect, it } from 'vitest';
import { buildCli } from '../../src/cli/program.js';
import { runCli } from '../support/child-process.js';

const CLI_DOC = fileURLToPath(new URL('../../docs/cli.md', import.meta.url));

/** Help text with its line wrapping undone (commander wraps to the terminal's width). */
async function help(args: string[]): Promise<string> {
  const result = await runCli([...args, '--help'], {});
  expect(result.code, result.stderr).toBe(0);
  return result.stdout.replace(/\s+/g, ' ');
}

/** Every command a user can run, as typed after `tally` ("orgs create", "worker", …). */
function leafCommands(command: Command, prefix: string[] = []): string[] {
  return command.commands.flatMap((sub) => {
    const path = [...prefix, sub.name()];
    return sub.commands.length === 0 ? [path.join(' ')] : leafCommands(sub, path);
  });
}

describe('tally --help', () => {
  it('says that `tally worker` runs the folding stage, and that `serve` does unless TALLY_ROLE=api', async () => {
    const top = await help([]);
    expect(top).toMatch(/worker Run the background work only: folding stage, webhook delivery, scheduler/);
    expect(top).toMatch(
      /serve Run the HTTP API and dashboard, and the background work unless TALLY_ROLE=api/,
    );

    const worker = await help(['worker']);
    expect(worker).toMatch(
      /the folding stage \(report rollups, usage and the webhook messages of tracked events\)/,
    );
    expect(worker).toMatch(/needs at least one `tally worker`/);

    const serve = await help(['serve']);
    expect(serve).toMatch(
      /unless TALLY_ROLE=api, also the background work of `tally worker` \(folding stage/,
    );
  });

  it('gives every command a description, and docs/cli.md a section for each', () => {
    const doc = readFileSync(CLI_DOC, 'utf8');
    const commands = leafCommands(buildCli());
    expect(commands).toContain('worker');
    for (const name of commands) {
      const command = name
        .split(' ')
        .reduce<Command | undefined>(
          (parent, part) => parent?.commands.find((c) => c.name() === part),
          buildCli(),
        );
      expect(command?.description(), name).not.toBe('');
      expect(doc, `docs/cli.md has no heading for tally ${name}`).toContain(`### \`tally ${name}`);
    }
  });
});

import type { Command } from 'commander';
import type { ServiceCtx } from '../context.js';
import { print } from '../cli/output.js';
import { createOwner } from './tokens.js';

type WithCtx = <T>(fn: (ctx: ServiceCtx) => Promise<T>) => Promise<T>;

/**
 * `tally members create-owner`: the first owner of an existing installation's organisation.
 * An e-mail that already has an account becomes owner at once; for a new one it prints a
 * one-time link (7 days) where that person chooses their password. No password passes through
 * the command line or the operator's hands.
 */
export function registerCreateOwnerCommand(members: Command, withCtx: WithCtx): void {
  members
    .command('create-owner')
    .description(
      'Make an e-mail owner of an organisation: at once if it has an account, else print a one-time link to create it',
    )
    .requiredOption('--org <id>', 'organisation id')
    .requiredOption('--email <email>', "the owner's e-mail address")
    .option('--json', 'machine-readable output', false)
    .action(async (opts: { org: string; email: string; json: boolean }) => {
      const result = await withCtx((ctx) => createOwner(ctx, opts.org, opts.email));
      print(opts.json, result, () =>
        result.made === 'owner'
          ? [`${opts.email.trim().toLowerCase()} already has an account and is now owner of ${opts.org}.`]
          : [
              `Send this one-time link to ${opts.email.trim().toLowerCase()}; it creates their account as owner of ${opts.org} and works once, for 7 days:`,
              result.link,
            ],
      );
    });
}

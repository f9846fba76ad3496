import { ConfigError } from '../config.js';
import { AppError } from '../errors.js';
import { buildCli } from './program.js';

async function main(): Promise<void> {
  try {
    await buildCli().parseAsync(process.argv);
  } catch (error) {
    if (error instanceof ConfigError)
      process.stderr.write(`tally: invalid configuration: ${error.message}\n`);
    else if (error instanceof AppError) process.stderr.write(`tally: ${error.code}: ${error.message}\n`);
    else process.stderr.write(`tally: ${(error as Error).message}\n`);
    process.exit(1);
  }
}

void main();

/** Prints `value` as JSON with --json, else as the lines `human` returns. */
export function print(json: boolean, value: unknown, human: () => string[]): void {
  if (json) process.stdout.write(`${JSON.stringify(value, null, 2)}\n`);
  else process.stdout.write(`${human().join('\n')}\n`);
}

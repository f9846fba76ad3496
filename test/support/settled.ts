export const TIMED_OUT = Symbol('timed out');

/** `promise`, or TIMED_OUT if it has not settled after 5 s (a wait that would never end). */
export function settled<T>(promise: Promise<T>): Promise<T | typeof TIMED_OUT> {
  let timer: NodeJS.Timeout | undefined;
  const limit = new Promise<typeof TIMED_OUT>((resolve) => {
    timer = setTimeout(() => resolve(TIMED_OUT), 5_000);
  });
  return Promise.race([promise, limit]).finally(() => clearTimeout(timer));
}

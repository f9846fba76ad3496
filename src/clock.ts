/** Every verb reads time from here, so tests can move it without sleeping. */
export interface Clock {
  now(): Date;
}

export const systemClock: Clock = { now: () => new Date() };

/** A clock that only moves when told to; used by tests and by `--at` CLI options. */
export class ManualClock implements Clock {
  private current: number;

  constructor(start: Date | string = new Date()) {
    this.current = new Date(start).getTime();
  }

  now(): Date {
    return new Date(this.current);
  }

  set(at: Date | string): void {
    this.current = new Date(at).getTime();
  }

  advance(ms: number): void {
    this.current += ms;
  }
}

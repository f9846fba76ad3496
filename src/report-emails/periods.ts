import { dueDigestWeeks } from '../webhooks/digest.js';

export const FREQUENCIES = ['weekly', 'monthly'] as const;
export type Frequency = (typeof FREQUENCIES)[number];

/** The period a report e-mail covers: [from, to) by occurred_at, sent at `sendAt` (UTC). */
export interface ReportPeriod {
  frequency: Frequency;
  /** The Monday of the ISO week (`YYYY-MM-DD`) or the month (`YYYY-MM`). */
  key: string;
  from: number;
  to: number;
  sendAt: number;
}

const SEND_HOUR_MS = 9 * 3_600_000;

function monthPeriod(year: number, month: number): ReportPeriod {
  const from = Date.UTC(year, month, 1);
  const to = Date.UTC(year, month + 1, 1);
  return {
    frequency: 'monthly',
    key: new Date(from).toISOString().slice(0, 7),
    from,
    to,
    sendAt: to + SEND_HOUR_MS,
  };
}

/**
 * The latest period whose e-mail is due at `now`: the previous ISO week, due Mondays 09:00 UTC
 * (as the weekly digest), or the previous calendar month, due on the 1st at 09:00 UTC.
 */
export function latestDuePeriod(frequency: Frequency, now: Date): ReportPeriod {
  if (frequency === 'weekly') {
    const week = dueDigestWeeks(now)[0];
    if (!week) throw new Error('no week is due');
    return {
      frequency,
      key: week.key,
      from: week.from.getTime(),
      to: week.to.getTime(),
      sendAt: week.sendAt.getTime(),
    };
  }
  const y = now.getUTCFullYear();
  const m = now.getUTCMonth();
  const last = monthPeriod(y, m - 1);
  return last.sendAt <= now.getTime() ? last : monthPeriod(y, m - 2);
}

/** When the next e-mail of `frequency` goes out after `now`. */
export function nextSendAt(frequency: Frequency, now: Date): number {
  const week = 7 * 86_400_000;
  const due = latestDuePeriod(frequency, now);
  if (frequency === 'weekly') return due.sendAt + week;
  const next = new Date(due.to);
  return monthPeriod(next.getUTCFullYear(), next.getUTCMonth()).sendAt;
}

/** `9 November 2026 to 15 November 2026` or `November 2026`. */
export function periodLabel(p: ReportPeriod): string {
  const fmt = (ms: number, options: Intl.DateTimeFormatOptions) =>
    new Intl.DateTimeFormat('en-GB', { timeZone: 'UTC', ...options }).format(new Date(ms));
  if (p.frequency === 'monthly') return fmt(p.from, { month: 'long', year: 'numeric' });
  const day = { day: 'numeric', month: 'long', year: 'numeric' } as const;
  return `${fmt(p.from, day)} to ${fmt(p.to - 1, day)}`;
}

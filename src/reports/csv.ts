import { GROUP_KEY, type Dimension } from './params.js';
import type { ReportRow } from './report.js';

/** The spec's metrics, then the review columns (src/ledger/) after them. */
export const METRIC_COLUMNS = [
  'events',
  'hours_saved',
  'cost_saved',
  'agent_cost',
  'net_saved',
  'review_hours',
  'review_cost',
] as const;

// A spreadsheet runs a cell that starts like a formula; a leading ' makes it plain text.
const FORMULA_START = /^[=+\-@\t\r]/;
// Text that is neither formula-like nor needs quotes goes out as it is (most cells): one test.
const SPECIAL = /^[=+\-@\t\r]|[",\r\n]/;

/** One RFC 4180 cell. Text is neutralised against formula injection; numbers never are. */
export function csvCell(value: string | number | null): string {
  if (value === null) return '';
  if (typeof value === 'number') return String(value);
  if (!SPECIAL.test(value)) return value;
  const text = FORMULA_START.test(value) ? `'${value}` : value;
  return /[",\r\n]/.test(text) ? `"${text.replaceAll('"', '""')}"` : text;
}

export function csvLine(cells: ReadonlyArray<string | number | null>): string {
  return `${cells.map(csvCell).join(',')}\r\n`;
}

/** Header of a grouped report: group keys in group_by order, then the metrics (DESIGN §7). */
export function csvHeader(groupBy: readonly Dimension[], leading: readonly string[] = []): string {
  return csvLine([...leading, ...groupBy.map((d) => GROUP_KEY[d]), ...METRIC_COLUMNS]);
}

export function csvRow(
  groupBy: readonly Dimension[],
  row: ReportRow,
  leading: ReadonlyArray<string | number> = [],
): string {
  return csvLine([
    ...leading,
    ...groupBy.map((d) => row.group[GROUP_KEY[d]] ?? null),
    ...METRIC_COLUMNS.map((m) => row[m]),
  ]);
}

/** Columns before the group keys, e.g. the leaderboard's rank: a header and each row's cell. */
export interface LeadingColumn<R> {
  header: string;
  cell(row: R): string | number;
}

/** A whole CSV document, header first, for exports of any size (and for whole reports too). */
export async function* csvDocument<R extends ReportRow>(
  groupBy: readonly Dimension[],
  rows: AsyncIterable<R> | Iterable<R>,
  leading: ReadonlyArray<LeadingColumn<R>> = [],
): AsyncGenerator<string> {
  yield csvHeader(
    groupBy,
    leading.map((c) => c.header),
  );
  // Lines go out in batches: one write per row would dominate the time of a large export.
  let batch = '';
  for await (const row of rows) {
    batch += csvRow(
      groupBy,
      row,
      leading.map((c) => c.cell(row)),
    );
    if (batch.length >= 64 * 1024) {
      yield batch;
      batch = '';
    }
  }
  if (batch !== '') yield batch;
}

/** A whole CSV document as one string, for reports already in memory. */
export async function csvText<R extends ReportRow>(
  groupBy: readonly Dimension[],
  rows: readonly R[],
  leading: ReadonlyArray<LeadingColumn<R>> = [],
): Promise<string> {
  let text = '';
  for await (const part of csvDocument(groupBy, rows, leading)) text += part;
  return text;
}

import { csvLine } from '../reports/csv.js';
import { BREAKDOWNS, FIGURE_KEYS, breakdownRows, type Figures, type MonthFigures } from './figures.js';

/**
 * A statement as CSV (RFC 4180, UTF-8): one line per figure set, `dimension` being `total`,
 * `agent`, `task_type` or `client` and `key` the agent id, task type or client id (empty for the
 * total and for events without a client), then the metrics as in the JSON.
 */
export function statementCsv(figures: MonthFigures): string {
  const cells = (f: Figures) => FIGURE_KEYS.map((k) => f[k]);
  let text = csvLine(['dimension', 'key', ...FIGURE_KEYS]);
  text += csvLine(['total', null, ...cells(figures.totals)]);
  for (const b of BREAKDOWNS) {
    for (const row of breakdownRows(figures, b.list)) text += csvLine([b.dimension, row.key, ...cells(row)]);
  }
  return text;
}

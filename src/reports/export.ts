import { Readable } from 'node:stream';
import type { OrgCtx } from '../context.js';
import { csvDocument } from './csv.js';
import type { ReportInput } from './params.js';
import { streamReport, type ReportRow } from './report.js';

/**
 * The CSV body of an export (DESIGN §7). The first rows are read before it is returned, so a
 * failing query still becomes an error response rather than a cut-off download. Rows then leave
 * as the database produces them: memory stays flat however large the export.
 */
export async function openExport({ ctx, input }: { ctx: OrgCtx; input: ReportInput }): Promise<Readable> {
  const rows = streamReport({ ctx, input });
  const first = await rows.next();
  async function* all(): AsyncGenerator<ReportRow> {
    if (!first.done) yield first.value;
    yield* rows;
  }
  const body = Readable.from(csvDocument(input.groupBy, all()));
  // Destroying the body closes only the generators it has started; one destroyed before its
  // first read (the client went away) would leave `rows` open, and with it a PostgreSQL cursor
  // and its transaction. Closing `rows` on every end of the body releases them; it is a no-op
  // once the rows are done.
  body.once('close', () => {
    // A failed rollback leaves nothing to release: the driver drops a broken connection.
    rows.return(undefined).catch(() => undefined);
  });
  return body;
}

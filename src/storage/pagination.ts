/**
 * Lists are newest first by id (ULIDs sort by time) and fetched with `limit + 1` rows: the
 * extra row only says whether another page follows. The cursor is the last id shown.
 */
export function pageOf<Row extends { id: string }>(rows: Row[], limit: number) {
  const page = rows.slice(0, limit);
  const last = page[page.length - 1];
  return { page, next_cursor: rows.length > limit && last ? last.id : null };
}

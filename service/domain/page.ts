// One page of a list and its total, as the list routes answer them (GitLab's X-Total). Kept free of
// other domain imports: the audit trail uses it, and the migration function's bundle carries audit
// but must not carry what hashes passwords (test/lambda/bundle.test.ts).
export interface Page<T> {
  total: number;
  rows: T[];
}

/**
 * A page from rows that carry the window count (`count(*) over ()` as `total`); an empty page
 * (past the end) carries none, so `count` counts the matches on its own — unless the window
 * started at the first row (`offset` 0): then nothing matched and no count is needed.
 */
export async function windowPage<T extends { total: string }>(
  rows: T[],
  count: () => Promise<number | string | bigint>,
  offset?: number,
): Promise<Page<Omit<T, 'total'>>> {
  const total = rows.length > 0 ? Number(rows[0].total) : offset === 0 ? 0 : Number(await count());
  return { total, rows: rows.map(({ total: _total, ...row }) => row) };
}

// One page of a list and its total, as the list routes answer them (GitLab's X-Total). Kept free of
// other domain imports: the audit trail uses it, and the migration function's bundle carries audit
// but must not carry what hashes passwords (test/lambda/bundle.test.ts).
export interface Page<T> {
  total: number;
  rows: T[];
}

/**
 * A page from rows that carry the window count (`count(*) over ()` as `total`); an empty page
 * (past the end) carries none, so `count` counts the matches on its own.
 */
export async function windowPage<T extends { total: string }>(
  rows: T[],
  count: () => Promise<number | string | bigint>,
): Promise<Page<Omit<T, 'total'>>> {
  const total = rows.length > 0 ? Number(rows[0].total) : Number(await count());
  return { total, rows: rows.map(({ total: _total, ...row }) => row) };
}

// Helpers of the attack suite: every route the app serves (read from the app itself, so a new
// route is attacked without editing a list), a digest of every table's rows, and figures.
import type { FastifyInstance } from 'fastify';
import { sql } from 'kysely';
import type { Db } from '../../service/db/schema';

export interface RouteEntry {
  method: string;
  /** The route pattern, e.g. /api/v4/groups/:id/notification_settings. */
  url: string;
}

/**
 * Every (method, route) of the app, parsed from Fastify's own route tree
 * (printRoutes({ commonPrefix: false }): one node per line, "├── segment (GET, HEAD)", children
 * indented by four columns and continuing their parent's path).
 */
export function listRoutes(app: FastifyInstance): RouteEntry[] {
  const routes: RouteEntry[] = [];
  const stack: string[] = [];
  for (const line of app.printRoutes({ commonPrefix: false }).split('\n')) {
    const m = /^([│ ]*)(?:├── |└── )(.*?)(?: \(([A-Z, ]+)\))?$/.exec(line);
    if (!m) continue;
    const depth = [...m[1]].length / 4;
    const path = (depth === 0 ? '' : stack[depth - 1]) + m[2];
    stack[depth] = path;
    stack.length = depth + 1;
    const methods = m[3]?.split(', ') ?? [];
    // Every GET route answers HEAD too, without a route of its own in the table
    // (service/http/head-requests.ts): fuzzed as one more (method, route) pair.
    if (methods.includes('GET') && !methods.includes('HEAD')) methods.push('HEAD');
    for (const method of methods) routes.push({ method, url: path });
  }
  return routes;
}

/**
 * Tables and columns that a rejected request may legitimately change, by design: the brute-force
 * bookkeeping (contract §2 "Brute-force limits": failed credential checks count per account and
 * per address). Everything else must be byte-for-byte unchanged by a 4xx.
 */
export const BRUTE_FORCE_BOOKKEEPING: Record<string, string[] | 'all'> = {
  rate_limit_counters: 'all',
  users: ['failed_attempts', 'locked_until', 'attempt_seq', 'attempts_cleared_seq', 'updated_at'],
  // A token's use is recorded when it authenticates, before the request's parameters are checked
  // (as GitLab does), at most once a minute: a fuzz run longer than that sees it on a refusal.
  personal_access_tokens: ['last_used_at'],
};

/** One query returning an md5 of each table's rows (ordered), minus the bookkeeping above. */
export async function digestQuery(db: Db): Promise<() => Promise<Record<string, string>>> {
  const { rows } = await sql<{ table_name: string; columns: string[] }>`
    select table_name, array_agg(column_name::text order by ordinal_position) as columns
    from information_schema.columns
    where table_schema = 'public' and table_name not like 'kysely_%'
    group by table_name order by table_name
  `.execute(db);
  const parts = rows
    .filter((r) => BRUTE_FORCE_BOOKKEEPING[r.table_name] !== 'all')
    .map((r) => {
      const skip = BRUTE_FORCE_BOOKKEEPING[r.table_name] ?? [];
      const columns = r.columns.filter((c) => !skip.includes(c)).map((c) => `"${c}"`);
      return `select '${r.table_name}' as t, count(*)::text || ':' || coalesce(md5(string_agg(x::text, '|' order by x::text)), '-') as d
        from (select ${columns.join(', ')} from "${r.table_name}") x`;
    });
  const query = sql.raw<{ t: string; d: string }>(parts.join('\nunion all\n'));
  return async () => Object.fromEntries((await query.execute(db)).rows.map((r) => [r.t, r.d]));
}

/** The tables whose digest differs. */
export function changedTables(before: Record<string, string>, after: Record<string, string>): string[] {
  return Object.keys({ ...before, ...after }).filter((k) => before[k] !== after[k]);
}

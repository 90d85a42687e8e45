// Failed credential checks per client address, in fixed one-minute windows kept in PostgreSQL
// (rate_limit_counters), so the limit holds across Lambda instances. Successful checks never count.
// The per-account lock (10 consecutive failures → 10 minutes) lives on the user row: sign-in.ts.
import { sql } from 'kysely';
import type { DbOrTrx } from '../db/schema';

export const ADDRESS_FAILURE_LIMIT = 60;
export const ADDRESS_WINDOW_SECONDS = 60;

const addressKey = (address: string) => `failures:addr:${address}`;

/** A throttled address: what GitLab's RateLimit-* headers report (Gitlab::RackAttack). */
export interface Throttle {
  /** Seconds until the window ends (Retry-After). */
  retryAfter: number;
  /** Failures allowed per window. */
  limit: number;
  /** Failures counted in the current window. */
  observed: number;
  /** When the window ends. */
  resetAt: Date;
}

/**
 * The throttle on `address` when it has used up its failures in the current window, else
 * undefined. Checked before the credential check, so a correct password does not get through
 * either (no probing while blocked).
 */
export const addressThrottle = (db: DbOrTrx, address: string): Promise<Throttle | undefined> =>
  keyThrottle(db, addressKey(address), ADDRESS_FAILURE_LIMIT, ADDRESS_WINDOW_SECONDS);

/** Seconds left in the window starting at `windowStart` (negative once it is over). */
const remaining = (windowStart: ReturnType<typeof sql.ref>, windowSeconds: number) =>
  sql<number>`extract(epoch from (${windowStart} + make_interval(secs => ${windowSeconds}) - now()))`;

/** The throttle a counter row means: `limit` failures counted in a window not yet over. */
function throttleOf(
  row: { count: number; remaining: number | string | null } | undefined,
  limit: number,
): Throttle | undefined {
  if (!row || Number(row.remaining) <= 0 || row.count < limit) return undefined;
  const retryAfter = Math.max(1, Math.ceil(Number(row.remaining)));
  return { retryAfter, limit, observed: row.count, resetAt: new Date(Date.now() + retryAfter * 1000) };
}

/**
 * The address's counter read inside another query, so a credential look-up and its throttle cost
 * one round trip: `join` left-joins rate_limit_counters (as `rl`) on the address's key, `columns`
 * selects `failures` and `window_remaining`; addressThrottleOf reads them back. The values are
 * parameters, so the query's text stays the same for every address (a prepared statement).
 */
export const addressCounter = (address: string) => ({
  join: sql`left join rate_limit_counters rl on rl.key = ${addressKey(address)}`,
  columns: sql`rl.count as failures, ${remaining(sql.ref('rl.window_start'), ADDRESS_WINDOW_SECONDS)} as window_remaining`,
});

/** What addressCounter's columns read: nulls when the address has no counter. */
export interface CounterColumns {
  failures: number | null;
  window_remaining: number | string | null;
}

/** addressThrottle, from the columns of addressCounter. */
export const addressThrottleOf = (row: CounterColumns): Throttle | undefined =>
  throttleOf(
    row.failures === null ? undefined : { count: row.failures, remaining: row.window_remaining },
    ADDRESS_FAILURE_LIMIT,
  );

/** Seconds until `address` may try again when it has used up its failures, else undefined. */
export const addressRetryAfter = async (db: DbOrTrx, address: string): Promise<number | undefined> =>
  (await addressThrottle(db, address))?.retryAfter;

/** Count one failure for `address` (one atomic upsert: concurrent failures all count). */
export const recordAddressFailure = (db: DbOrTrx, address: string): Promise<void> =>
  recordKeyFailure(db, addressKey(address), ADDRESS_WINDOW_SECONDS);

/**
 * The same fixed-window counter under any key (e.g. user-code guesses per web session): seconds
 * until the key may try again once `limit` failures were counted in the current window, else undefined.
 */
export const keyRetryAfter = async (
  db: DbOrTrx,
  key: string,
  limit: number,
  windowSeconds: number,
): Promise<number | undefined> => (await keyThrottle(db, key, limit, windowSeconds))?.retryAfter;

/** The throttle on `key` once `limit` failures were counted in the current window, else undefined. */
export async function keyThrottle(
  db: DbOrTrx,
  key: string,
  limit: number,
  windowSeconds: number,
): Promise<Throttle | undefined> {
  const row = await db
    .selectFrom('rate_limit_counters')
    .select(['count', remaining(sql.ref('window_start'), windowSeconds).as('remaining')])
    .where('key', '=', key)
    .executeTakeFirst();
  return throttleOf(row, limit);
}

/** Count one failure under `key` (one atomic upsert: concurrent failures all count). */
export async function recordKeyFailure(db: DbOrTrx, key: string, windowSeconds: number): Promise<void> {
  const window = sql`make_interval(secs => ${windowSeconds})`;
  await sql`
    insert into rate_limit_counters (key, window_start, count) values (${key}, now(), 1)
    on conflict (key) do update set
      count = case when rate_limit_counters.window_start <= now() - ${window} then 1 else rate_limit_counters.count + 1 end,
      window_start = case when rate_limit_counters.window_start <= now() - ${window} then now() else rate_limit_counters.window_start end
  `.execute(db);
  // Opportunistic clean-up of stale windows (1 in 50 failures).
  if (Math.random() < 0.02) {
    await db
      .deleteFrom('rate_limit_counters')
      .where('window_start', '<', sql<Date>`now() - interval '1 hour'`)
      .execute();
  }
}

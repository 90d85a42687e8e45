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
    .select([
      'count',
      sql<number>`extract(epoch from (window_start + make_interval(secs => ${windowSeconds}) - now()))`.as('remaining'),
    ])
    .where('key', '=', key)
    .executeTakeFirst();
  if (!row || Number(row.remaining) <= 0 || row.count < limit) return undefined;
  const retryAfter = Math.max(1, Math.ceil(Number(row.remaining)));
  return { retryAfter, limit, observed: row.count, resetAt: new Date(Date.now() + retryAfter * 1000) };
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

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
export async function addressThrottle(db: DbOrTrx, address: string): Promise<Throttle | undefined> {
  const row = await db
    .selectFrom('rate_limit_counters')
    .select([
      'count',
      sql<number>`extract(epoch from (window_start + make_interval(secs => ${ADDRESS_WINDOW_SECONDS}) - now()))`.as(
        'remaining',
      ),
    ])
    .where('key', '=', addressKey(address))
    .executeTakeFirst();
  if (!row || Number(row.remaining) <= 0 || row.count < ADDRESS_FAILURE_LIMIT) return undefined;
  const retryAfter = Math.max(1, Math.ceil(Number(row.remaining)));
  return {
    retryAfter,
    limit: ADDRESS_FAILURE_LIMIT,
    observed: row.count,
    resetAt: new Date(Date.now() + retryAfter * 1000),
  };
}

/**
 * Seconds until `address` may try again when it has used up its failures in the current window,
 * else undefined. Checked before the credential check, so a correct password does not get through
 * either (no probing while blocked).
 */
export async function addressRetryAfter(db: DbOrTrx, address: string): Promise<number | undefined> {
  return (await addressThrottle(db, address))?.retryAfter;
}

/** Count one failure for `address` (one atomic upsert: concurrent failures all count). */
export async function recordAddressFailure(db: DbOrTrx, address: string): Promise<void> {
  const window = sql`make_interval(secs => ${ADDRESS_WINDOW_SECONDS})`;
  await sql`
    insert into rate_limit_counters (key, window_start, count) values (${addressKey(address)}, now(), 1)
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

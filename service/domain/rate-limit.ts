// Failed credential checks per client address, in fixed one-minute windows kept in PostgreSQL
// (rate_limit_counters), so the limit holds across Lambda instances. Successful checks never count.
// The per-account lock (10 consecutive failures → 10 minutes) lives on the user row: sign-in.ts.
import { type RawBuilder, sql } from 'kysely';
import type { DbOrTrx } from '../db/schema';

export const ADDRESS_FAILURE_LIMIT = 60;
export const ADDRESS_WINDOW_SECONDS = 60;

const addressKey = (address: string) => `failures:addr:${address}`;

/**
 * Seconds until `address` may try again when it has used up its failures in the current window,
 * else undefined. Checked before the credential check, so a correct password does not get through
 * either (no probing while blocked).
 */
export async function addressRetryAfter(db: DbOrTrx, address: string): Promise<number | undefined> {
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
  return Math.max(1, Math.ceil(Number(row.remaining)));
}

/**
 * addressRetryAfter as a scalar subquery (seconds, or null), for a look-up that runs anyway to
 * carry: the limit is read from the database on every check — so it holds across instances —
 * without a round trip of its own. (An in-process "no recent failures here" hint was rejected:
 * failures recorded by other instances are invisible to it, so each instance would let one more
 * guess, or one probe while blocked, through.)
 */
export function addressRetryAfterColumn(address: string): RawBuilder<number | null> {
  const end = sql`r.window_start + make_interval(secs => ${ADDRESS_WINDOW_SECONDS})`;
  return sql<number | null>`(select case when r.count >= ${ADDRESS_FAILURE_LIMIT} and ${end} > now()
    then greatest(1, ceil(extract(epoch from (${end} - now()))))::int end
    from rate_limit_counters r where r.key = ${addressKey(address)})`;
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

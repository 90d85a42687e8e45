// Brute-force limits (contract §2 "Brute-force limits"), the one home of the rule: failed
// credential checks per client address in fixed one-minute windows (rate_limit_counters), and per
// account (10 consecutive failures lock it for 10 minutes: users.failed_attempts / locked_until).
// The database is the truth, so the limits hold across Lambda instances.
//
// Every attempt is counted before its credential is checked, by the statement that reads the
// counter (reserve → verify → settle): an upsert or update that admits the attempt only while the
// counter is under its limit. PostgreSQL re-reads a row that a concurrent statement changed before
// it applies the condition, so of 50 concurrent attempts no more are admitted than the limit
// allows. A failure leaves its reservation standing (it is the failure); a success releases it
// (successful requests never count). A success on an account clears only the reservations up to
// its own ticket (users.attempt_seq), never a failure that started after it.
import { type RawBuilder, sql } from 'kysely';
import type { DbOrTrx } from '../db/schema';
import { statementTemplates } from '../db/statement-templates';

export const ADDRESS_FAILURE_LIMIT = 60;
export const ADDRESS_WINDOW_SECONDS = 60;
export const ACCOUNT_FAILURE_LIMIT = 10;
export const ACCOUNT_LOCK_SECONDS = 600;

/** A counter in fixed windows: at most `limit` failures per `windowSeconds` under `key`. */
export interface WindowLimit {
  key: string;
  limit: number;
  windowSeconds: number;
}

/** The per-address limit every credential check shares. */
export const addressLimit = (address: string): WindowLimit => ({
  key: `failures:addr:${address}`,
  limit: ADDRESS_FAILURE_LIMIT,
  windowSeconds: ADDRESS_WINDOW_SECONDS,
});

/** A throttled key: what GitLab's RateLimit-* headers report (Gitlab::RackAttack). */
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

/** One admitted attempt on a window counter: the window it was counted in (µs since the epoch). */
export interface WindowTicket {
  key: string;
  window: number;
}

/** One admitted attempt on an account: its place in the account's sequence of attempts. */
export interface AccountTicket {
  userId: number;
  seq: number;
}

/** What an admitted attempt holds until it is settled. */
export interface Reservation {
  windows: WindowTicket[];
  account?: AccountTicket;
}

export type Admission = { ok: true; reservation: Reservation } | { ok: false; throttle: Throttle };

const windowOf = (column: RawBuilder<unknown>) => sql<number>`(extract(epoch from ${column}) * 1000000)::bigint`;

/**
 * The admission of one attempt on `limit`, as a data-modifying CTE named `name`: counts `counts`
 * (1, or 0 for an attempt whose credential the same statement found right) unless the current
 * window already holds `limit` failures. Returns the counted window when admitted, no row when not.
 */
function admitCte(name: string, limit: WindowLimit, counts: RawBuilder<number>) {
  const expired = sql`c.window_start <= now() - make_interval(secs => ${limit.windowSeconds})`;
  return sql`${sql.id(name)} as (
    insert into rate_limit_counters as c (key, window_start, count)
    select ${limit.key}, now(), ${counts}
    -- An attempt that counts nothing needs no new row: with none in the snapshot it is under the limit.
    where ${counts} > 0 or exists (select from rate_limit_counters where key = ${limit.key})
    on conflict (key) do update set
      count = case when ${expired} then 0 else c.count end + excluded.count,
      window_start = case when ${expired} then now() else c.window_start end
    where ${expired} or c.count < ${limit.limit}
    returning ${windowOf(sql.ref('c.window_start'))} as counted_window
  )`;
}

/** The counter's state as the statement's snapshot saw it (for Retry-After when refused). */
const snapshotColumns = (limit: WindowLimit) => sql`
  (select count from rate_limit_counters where key = ${limit.key}) as failures,
  (select extract(epoch from (window_start + make_interval(secs => ${limit.windowSeconds}) - now()))
    from rate_limit_counters where key = ${limit.key}) as window_remaining`;

interface SnapshotRow {
  failures: number | null;
  window_remaining: number | string | null;
}

function throttleOf(limit: WindowLimit, row: SnapshotRow): Throttle {
  // A counter created by a concurrent statement is not in the snapshot: a whole window then.
  const remaining = row.window_remaining === null ? limit.windowSeconds : Number(row.window_remaining);
  const retryAfter = Math.min(limit.windowSeconds, Math.max(1, Math.ceil(remaining)));
  return {
    retryAfter,
    limit: limit.limit,
    observed: Math.max(row.failures ?? limit.limit, limit.limit),
    resetAt: new Date(Date.now() + retryAfter * 1000),
  };
}

/**
 * Reserve one attempt on each of `limits`, in order (e.g. a session's and the address's): all
 * admitted, or none held (the first refusal answers, earlier reservations are released).
 */
export async function reserveAttempt(db: DbOrTrx, limits: WindowLimit[]): Promise<Admission> {
  const windows: WindowTicket[] = [];
  for (const limit of limits) {
    const { rows } = await sql<SnapshotRow & { counted_window: number | null }>`
      with ${admitCte('admitted', limit, sql<number>`1`)}
      select (select counted_window from admitted) as counted_window, ${snapshotColumns(limit)}
    `.execute(db);
    const row = rows[0];
    if (row.counted_window === null) {
      await releaseReservation(db, { windows });
      return { ok: false, throttle: throttleOf(limit, row) };
    }
    windows.push({ key: limit.key, window: Number(row.counted_window) });
  }
  return { ok: true, reservation: { windows } };
}

/**
 * A credential check done by the statement itself (a digest compared in SQL, e.g. a client
 * secret): the CTE `admitted`, which counts one failure on `limit` when `failed` holds and refuses
 * the attempt, right or wrong, once the window holds `limit` failures; read it back with
 * checkedAttemptOf. One round trip checks, counts and limits.
 */
export function checkedAttempt(limit: WindowLimit, failed: RawBuilder<boolean>) {
  const counts = sql<number>`case when ${failed} then 1 else 0 end`;
  return {
    cte: admitCte('admitted', limit, counts),
    // Admitted: counted, or a success on an address with no counter at all (nothing inserted).
    columns: sql`(select counted_window from admitted) is not null
      or (${counts} = 0 and not exists (select from rate_limit_counters where key = ${limit.key})) as admitted,
      ${snapshotColumns(limit)}`,
  };
}

/**
 * checkedAttempt's answer for the one case that writes nothing, decided without its insert: an
 * attempt whose credential the statement found right (`right`), from an address with no counter in
 * the statement's snapshot, is admitted (checkedAttempt admits it the same way, counting nothing).
 * False means "not decided here", never "refused": the caller runs checkedAttempt's statement, which
 * counts a failure or reads the window. A statement without the insert's plan nodes costs
 * PostgreSQL less, and a right credential from a quiet address is nearly every request.
 */
export const unwrittenAdmission = (limit: Pick<WindowLimit, 'key'>, right: RawBuilder<boolean>) =>
  sql<boolean>`(${right} and not exists (select from rate_limit_counters where key = ${limit.key}))`;

/** What checkedAttempt's columns read. */
export interface CheckedAttemptColumns extends SnapshotRow {
  admitted: boolean;
}

/** The throttle a checkedAttempt refused with, or undefined when it was admitted. */
export const checkedAttemptThrottle = (limit: WindowLimit, row: CheckedAttemptColumns): Throttle | undefined =>
  row.admitted ? undefined : throttleOf(limit, row);

/**
 * Reserve one attempt on an account; undefined while it is locked (10 failures, or reservations
 * still in flight, within the lock's 10 minutes). The tenth reservation sets the lock at once, so
 * attempts in flight cannot push past it; a lock that has run out starts the count over.
 */
export async function reserveAccountAttempt(db: DbOrTrx, userId: number): Promise<AccountTicket | undefined> {
  const values = { userId, accountLimit: ACCOUNT_FAILURE_LIMIT, lockSeconds: ACCOUNT_LOCK_SECONDS };
  const row = await accountReservations.run<{ seq: number }>(db, 'reserve', values, (slot) => {
    const expired = sql`locked_until is not null and locked_until <= now()`;
    const next = sql`case when ${expired} then 1 else failed_attempts + 1 end`;
    return sql`
    update users set
      failed_attempts = ${next},
      attempts_cleared_seq = case when ${expired} then attempt_seq else attempts_cleared_seq end,
      locked_until = case when ${next} >= ${slot('accountLimit')}
        then now() + make_interval(secs => ${slot('lockSeconds')}) when ${expired} then null else locked_until end,
      attempt_seq = attempt_seq + 1
    where id = ${slot('userId')} and (locked_until is null or locked_until <= now())
    returning attempt_seq as seq
  `;
  });
  const seq = row.rows[0]?.seq;
  return seq === undefined ? undefined : { userId, seq: Number(seq) };
}

// Built once (db/statement-templates.ts) and run straight on the pool: every password check that
// names an account sends it.
const accountReservations = statementTemplates<'userId' | 'accountLimit' | 'lockSeconds'>(1);

/** The slots of admissionCte: the window's key, limit and length, bound by admissionValues. */
export type AdmissionSlot = 'key' | 'limit' | 'windowSeconds';

export const admissionValues = (limit: WindowLimit): Record<AdmissionSlot, unknown> => ({
  key: limit.key,
  limit: limit.limit,
  windowSeconds: limit.windowSeconds,
});

/**
 * reserveAttempt on one window as a CTE (`admitted`) of a statement that reads something else
 * beside it (the sign-in's user); `columns` read it back for admissionOf. The statement must lock
 * nothing else: a statement that locks the window's counter and another row can deadlock with
 * settleSuccess, which locks the account's row and then the counter.
 */
export function admissionCte(slot: <T = unknown>(name: AdmissionSlot) => T) {
  const limit = {
    key: slot<string>('key'),
    limit: slot<number>('limit'),
    windowSeconds: slot<number>('windowSeconds'),
  };
  return {
    cte: admitCte('admitted', limit, sql<number>`1`),
    columns: sql`(select counted_window from admitted) as counted_window, ${snapshotColumns(limit)}`,
  };
}

/** What admissionCte's columns read. */
export interface AdmissionColumns extends SnapshotRow {
  counted_window: number | string | null;
}

/** The admission an admissionCte statement made: refused (the window's throttle) or admitted. */
export function admissionOf(limit: WindowLimit, row: AdmissionColumns): Admission {
  if (row.counted_window === null) return { ok: false, throttle: throttleOf(limit, row) };
  return { ok: true, reservation: { windows: [{ key: limit.key, window: Number(row.counted_window) }] } };
}

/**
 * Settle a successful attempt: its window reservations are released, and on the account its own
 * reservation — with `clearAccount`, every reservation up to its ticket as well (failures must be
 * consecutive), but none made after it (those are at most attempt_seq - its ticket). A ticket that
 * a later success already cleared changes nothing. One statement.
 */
export async function settleSuccess(
  db: DbOrTrx,
  reservation: Reservation,
  options: { clearAccount: boolean } = { clearAccount: false },
): Promise<void> {
  const { windows, account } = reservation;
  if (windows.length === 0 && !account) return;
  const values: Record<SettleSlot, unknown> = {
    keys: windows.map((w) => w.key),
    windows: windows.map((w) => w.window),
    seq: account?.seq ?? 0,
    userId: account?.userId ?? null,
    clearAccount: options.clearAccount,
    accountLimit: ACCOUNT_FAILURE_LIMIT,
  };
  // Two shapes: what an account keeps of its failures depends on clearAccount.
  await settlements.run(db, options.clearAccount ? 'clear' : 'keep', values, (slot) => {
    const seq = slot('seq');
    const mine = sql<boolean>`${seq}::bigint > attempts_cleared_seq`;
    const remaining = options.clearAccount
      ? sql<number>`greatest(0, least(failed_attempts - 1, attempt_seq - ${seq}::bigint))`
      : sql<number>`greatest(0, failed_attempts - 1)`;
    const after = sql<number>`case when ${mine} then ${remaining} else failed_attempts end`;
    return sql`
    with mine as (
      select * from unnest(${slot('keys')}::text[], ${slot('windows')}::bigint[])
        as r(key, counted_window)
    ),
    -- The last failure of its window gone: no row left behind (a success leaves no trace).
    gone as (
      delete from rate_limit_counters c using mine r
      where c.key = r.key and ${windowOf(sql.ref('c.window_start'))} = r.counted_window and c.count = 1
      returning c.key
    ),
    released as (
      update rate_limit_counters c set count = c.count - 1
      from mine r
      where c.key = r.key and ${windowOf(sql.ref('c.window_start'))} = r.counted_window and c.count > 0
        and c.key not in (select key from gone)
    )
    update users set
      failed_attempts = ${after},
      locked_until = case when ${after} < ${slot('accountLimit')} then null else locked_until end,
      attempts_cleared_seq = case when ${slot('clearAccount')} and ${mine}
        then ${seq}::bigint else attempts_cleared_seq end
    where id = ${slot('userId')}::bigint
  `;
  });
}

type SettleSlot = 'keys' | 'windows' | 'seq' | 'userId' | 'clearAccount' | 'accountLimit';
// Built once per shape (db/statement-templates.ts) and run straight on the pool: every successful
// credential check ends with it.
const settlements = statementTemplates<SettleSlot>(2);

/** Release reservations that checked nothing (a refusal for another reason). */
export const releaseReservation = (db: DbOrTrx, reservation: Reservation): Promise<void> =>
  settleSuccess(db, reservation);

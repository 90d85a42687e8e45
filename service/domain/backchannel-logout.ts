// Ending sessions, and the back-channel logout outbox (OpenID Connect Back-Channel Logout 1.0).
// Every way a Lanyard session ends — sign-out, end_session, a password change or reset, a block,
// a revoke from the sessions page or the CLI, the retention job — goes through endSessions: one
// statement deletes the sessions and, in the same transaction, queues one delivery per
// application that received an ID token in one of them (a used authorization code with `openid`
// and the session's sid) and registered a backchannel_logout_uri. Nothing else ever queues one,
// so an application that did not take part in a session never hears of it. The sender
// (service/mail/backchannel-sender.ts) signs and POSTs the logout tokens, with retries.
import { type RawBuilder, sql } from 'kysely';
import type { DbOrTrx, MailStatus } from '../db/schema';
import { recordAudit } from './audit';
import { invalid, notFound } from './errors';
import { requeued } from './mail/operations';

/** Why a session ended: kept with each delivery, listed for the operator. */
export type SessionEndReason = 'sign_out' | 'end_session' | 'sign_in' | 'password' | 'blocked' | 'revoked' | 'expired';

/** The logout token's event (Back-Channel Logout 1.0 §2.4). */
const BACKCHANNEL_LOGOUT_EVENT = 'http://schemas.openid.net/event/backchannel-logout';
/** A logout token is short-lived (§2.4 recommends minutes); each attempt signs a fresh one, same jti. */
const LOGOUT_TOKEN_LIFETIME_SECONDS = 120;

/**
 * Delete the web sessions (alias `s`) matching `which` and queue their logout tokens. `keepSid`:
 * a session whose sid lives on in a new session (the password page keeps its browser signed in)
 * is deleted without logouts. Returns the number of sessions ended.
 */
export async function endSessions(
  db: DbOrTrx,
  which: RawBuilder<unknown>,
  reason: SessionEndReason,
  options: { keepSid?: string } = {},
): Promise<number> {
  const { rows } = await sql<{ n: number }>`
    with ended as (
      delete from web_sessions s where ${which} returning s.user_id, s.data->>'sid' as sid
    ), queued as (
      insert into backchannel_logout_deliveries (application_id, client_id, uri, sub, sid, reason)
      select distinct a.id, a.uid, a.backchannel_logout_uri, e.user_id::text, e.sid, ${reason}::text
        from ended e
        join oauth_authorization_codes c on c.sid = e.sid and c.user_id = e.user_id
        join oauth_applications a on a.id = c.application_id
       where c.used_at is not null and 'openid' = any(c.scopes)
         and a.backchannel_logout_uri is not null
         and e.sid is distinct from ${options.keepSid ?? null}::text
      on conflict (application_id, sid) do nothing
      returning id
    )
    select count(*)::int as n from ended`.execute(db);
  return rows[0].n;
}

/** A claimed delivery: what the sender needs to sign and POST its logout token. */
export interface ClaimedLogout {
  id: number;
  jti: string;
  client_id: string;
  uri: string;
  sub: string;
  sid: string;
  attempts: number;
}

/**
 * Claim up to `limit` due deliveries for `leaseSeconds` (as claimDueMail: FOR UPDATE SKIP LOCKED,
 * a lapsed claim taken over, a lapsed last attempt marked failed; a claim never moves
 * next_attempt_at, so a lapsed one was due too). One ordered walk of the index of deliveries
 * still to do (backchannel_logout_deliveries_queue, migration 0029) that stops at `limit`.
 */
export async function claimDueLogouts(
  db: DbOrTrx,
  options: { limit: number; leaseSeconds: number; maxAttempts: number },
): Promise<ClaimedLogout[]> {
  const { rows } = await sql<ClaimedLogout & { status: string }>`
    with due as (
      select id from backchannel_logout_deliveries
       where status in ('pending', 'sending') and next_attempt_at <= now()
         and (status = 'pending' or locked_until < now())
       order by next_attempt_at, id
       limit ${options.limit}
       for update skip locked
    ), last as (select ${options.maxAttempts}::int as max)
    update backchannel_logout_deliveries d
       set status = case when d.status = 'sending' and d.attempts >= last.max then 'failed' else 'sending' end,
           attempts = case when d.status = 'sending' and d.attempts >= last.max then d.attempts else d.attempts + 1 end,
           last_error = case when d.status = 'sending' and d.attempts >= last.max
                             then 'the sender stopped during the last attempt' else d.last_error end,
           locked_until = case when d.status = 'sending' and d.attempts >= last.max
                               then null else now() + make_interval(secs => ${options.leaseSeconds}) end,
           updated_at = now()
      from due, last
     where d.id = due.id
    returning d.id, d.jti, d.client_id, d.uri, d.sub, d.sid, d.attempts, d.status`.execute(db);
  return rows
    .filter((r) => r.status === 'sending')
    .map(({ status: _, ...row }) => ({ ...row, id: Number(row.id) }))
    .sort((a, b) => a.id - b.id);
}

/**
 * The logout token's claims (Back-Channel Logout 1.0 §2.4): iss, aud, iat, exp, jti, events, and
 * both sub and sid (so backchannel_logout_session_required is always met); never a nonce.
 */
export function logoutTokenClaims(delivery: ClaimedLogout, issuer: string, now = Date.now()) {
  const iat = Math.floor(now / 1000);
  return {
    iss: issuer,
    aud: delivery.client_id,
    iat,
    exp: iat + LOGOUT_TOKEN_LIFETIME_SECONDS,
    jti: delivery.jti,
    sub: delivery.sub,
    sid: delivery.sid,
    events: { [BACKCHANNEL_LOGOUT_EVENT]: {} },
  };
}

/** The relying party answered 2xx. */
export async function markLogoutSent(db: DbOrTrx, id: number, responseStatus: number): Promise<void> {
  await db
    .updateTable('backchannel_logout_deliveries')
    .set({
      status: 'sent',
      sent_at: sql<Date>`now()`,
      updated_at: sql<Date>`now()`,
      locked_until: null,
      last_error: null,
      response_status: responseStatus,
    })
    .where('id', '=', id)
    .where('status', '=', 'sending')
    .execute();
}

/** An attempt failed: pending again after `retryInSeconds`, or failed (permanent, or the last attempt). */
export async function markLogoutAttemptFailed(
  db: DbOrTrx,
  id: number,
  failure: {
    error: string;
    responseStatus: number | null;
    permanent: boolean;
    retryInSeconds: number;
    maxAttempts: number;
  },
): Promise<'pending' | 'failed' | undefined> {
  const { rows } = await sql<{ status: 'pending' | 'failed' }>`
    update backchannel_logout_deliveries
       set status = case when ${failure.permanent} or attempts >= ${failure.maxAttempts} then 'failed' else 'pending' end,
           next_attempt_at = now() + make_interval(secs => ${failure.retryInSeconds}),
           locked_until = null, updated_at = now(), last_error = ${failure.error.slice(0, 1000)},
           response_status = ${failure.responseStatus}
     where id = ${id} and status = 'sending'
    returning status`.execute(db);
  return rows[0]?.status;
}

export interface LogoutDelivery {
  id: number;
  client_id: string;
  application_name: string;
  uri: string;
  sub: string;
  sid: string;
  reason: string;
  status: MailStatus;
  attempts: number;
  next_attempt_at: Date;
  last_error: string | null;
  response_status: number | null;
  created_at: Date;
  sent_at: Date | null;
}

const deliveries = (db: DbOrTrx) =>
  db
    .selectFrom('backchannel_logout_deliveries as d')
    .innerJoin('oauth_applications as a', 'a.id', 'd.application_id')
    .select([
      'd.id',
      'd.client_id',
      'a.name as application_name',
      'd.uri',
      'd.sub',
      'd.sid',
      'd.reason',
      'd.status',
      'd.attempts',
      'd.next_attempt_at',
      'd.last_error',
      'd.response_status',
      'd.created_at',
      'd.sent_at',
    ]);

/** The newest first, at most `limit` (`lanyard-admin logout-deliveries list`). */
export async function listLogoutDeliveries(
  db: DbOrTrx,
  options: { status?: MailStatus; limit?: number } = {},
): Promise<LogoutDelivery[]> {
  const rows = await deliveries(db)
    .$if(options.status !== undefined, (q) => q.where('d.status', '=', options.status!))
    .orderBy('d.id', 'desc')
    .limit(options.limit ?? 100)
    .execute();
  return rows.map((r) => ({ ...r, id: Number(r.id) }));
}

/**
 * `lanyard-admin logout-deliveries retry ID`: a failed (or pending) delivery due again now, with a
 * fresh attempt budget and the same jti (each attempt signs a fresh token). A sent one is refused
 * (the relying party already ended the session), as is one the sender is working on. Audited.
 */
export async function retryLogoutDelivery(db: DbOrTrx, id: number, actor: string): Promise<LogoutDelivery> {
  const current = await deliveries(db).where('d.id', '=', id).executeTakeFirst();
  if (!current) throw notFound(`logout delivery ${id} not found`);
  if (current.status === 'sent')
    throw invalid(`logout delivery ${id} was already sent (${current.sent_at?.toISOString()})`);
  if (current.status === 'sending') throw invalid(`logout delivery ${id} is being sent right now`);
  const row = await db
    .updateTable('backchannel_logout_deliveries')
    .set(requeued())
    .where('id', '=', id)
    .where('status', 'in', ['failed', 'pending'])
    .returning(['status', 'attempts', 'next_attempt_at'])
    .executeTakeFirst();
  if (!row) throw invalid(`logout delivery ${id} changed meanwhile; try again`);
  await recordAudit(db, {
    actor,
    action: 'logout_delivery.retry',
    targetType: 'logout_delivery',
    targetId: id,
    details: { was: current.status },
  });
  return { ...current, ...row, id: Number(current.id) };
}

/** Every failed delivery due again now, with a fresh attempt budget; returns how many. Audited. */
export async function retryFailedLogoutDeliveries(db: DbOrTrx, actor: string): Promise<number> {
  const result = await db
    .updateTable('backchannel_logout_deliveries')
    .set(requeued())
    .where('status', '=', 'failed')
    .executeTakeFirst();
  const n = Number(result.numUpdatedRows);
  if (n)
    await recordAudit(db, {
      actor,
      action: 'logout_delivery.retry',
      targetType: 'logout_delivery',
      details: { failed: n },
    });
  return n;
}

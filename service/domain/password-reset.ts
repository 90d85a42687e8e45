// Forgotten passwords (GitLab's /users/password): a reset link mailed to a confirmed address of
// an active account, and the new password set through it.
//
// - No enumeration: the request's answer is the same whether or not the address belongs to
//   anyone, and so is its work but for the one outbox row (the same look-up, counters and token
//   statement run either way; the token statement inserts nothing for an unknown address).
// - Limits: per client address (RESET_ADDRESS_LIMIT an hour) and per account — counted under the
//   account when the address is someone's, else under the address typed, so an unknown address is
//   limited exactly like a known one (RESET_ACCOUNT_LIMIT an hour).
// - The token: 256 random bits, only its SHA-256 digest stored, one per user (a newer request
//   replaces the older), valid RESET_VALID_MINUTES, deleted when used. Setting the password goes
//   through storePasswordHash, like every password change: sessions end, the lock lifts.
import { sql } from 'kysely';
import { withTransaction } from '../db/transaction';
import type { DbOrTrx } from '../db/schema';
import { recordAudit } from './audit';
import { invalid } from './errors';
import { type MailSettings, resetPasswordMessage } from './mail/account-messages';
import { enqueueMail } from './mail/outbox';
import { hashPassword, passwordProblem } from './passwords';
import { reserveAttempt } from './rate-limit';
import { randomHex, sha256Hex } from './secrets';
import { enqueueSecurityAlert } from './security-alerts';
import { storePasswordHash } from './users';

const RESET_VALID_MINUTES = 60;
const RESET_ACCOUNT_LIMIT = 5;
const RESET_ADDRESS_LIMIT = 20;
const RESET_WINDOW_SECONDS = 3600;

export type ResetRequestResult = { ok: true } | { ok: false; reason: 'rate_limited'; retryAfter: number };

interface Recipient {
  id: number;
  email: string;
  name: string;
  username: string;
}

/** The active account owning `email` as a confirmed address (primary or secondary), with that address. */
async function findRecipient(db: DbOrTrx, email: string): Promise<Recipient | undefined> {
  const key = email.trim().toLowerCase();
  const { rows } = await sql<Recipient>`
    select u.id, u.email, u.name, u.username from users u
    where lower(u.email) = ${key} and u.confirmed_at is not null and u.state = 'active'
    union all
    select u.id, e.email, u.name, u.username from user_emails e join users u on u.id = e.user_id
    where lower(e.email) = ${key} and e.confirmed_at is not null and u.state = 'active'
    limit 1
  `.execute(db);
  return rows[0];
}

/**
 * Ask for a reset link for `email`. Resolves `{ ok: true }` whether or not a link was sent; the
 * only other answer is the rate limit, which counts unknown addresses the same way.
 */
export async function requestPasswordReset(
  db: DbOrTrx,
  input: { email: string; clientAddress: string; mail: MailSettings },
): Promise<ResetRequestResult> {
  const email = input.email.trim().slice(0, 320);
  const recipient = email ? await findRecipient(db, email) : undefined;
  const keys = [
    { key: `reset:addr:${input.clientAddress}`, limit: RESET_ADDRESS_LIMIT },
    {
      key: recipient ? `reset:user:${recipient.id}` : `reset:email:${email.toLowerCase()}`,
      limit: RESET_ACCOUNT_LIMIT,
    },
  ];
  // Every request counts (the reservations are never given back): reserved before anything is sent,
  // so 50 concurrent requests send no more links than the limit allows.
  const admission = await reserveAttempt(
    db,
    keys.map(({ key, limit }) => ({ key, limit, windowSeconds: RESET_WINDOW_SECONDS })),
  );
  if (!admission.ok) return { ok: false, reason: 'rate_limited', retryAfter: admission.throttle.retryAfter };
  const token = randomHex();
  await withTransaction(db, async (trx) => {
    // One statement either way: with no recipient it inserts nothing.
    await sql`
      insert into password_reset_tokens (user_id, token_digest, expires_at)
      select id, ${sha256Hex(token)}, now() + make_interval(mins => ${RESET_VALID_MINUTES})
      from users where id = ${recipient?.id ?? null}
      on conflict (user_id) do update
        set token_digest = excluded.token_digest, expires_at = excluded.expires_at, created_at = now()
    `.execute(trx);
    if (!recipient) return;
    const message = resetPasswordMessage(input.mail, recipient.name, token, RESET_VALID_MINUTES);
    await enqueueMail(trx, { to: recipient.email, ...message, kind: 'password_reset' });
  });
  return { ok: true };
}

const looksLikeToken = (token: string) => /^[0-9a-f]{64}$/.test(token);

/** The user a live reset token belongs to, or undefined (malformed, unknown, used, expired). */
export async function findResetTokenUser(db: DbOrTrx, token: string): Promise<{ id: number } | undefined> {
  if (!looksLikeToken(token)) return undefined;
  return db
    .selectFrom('password_reset_tokens')
    .select('user_id as id')
    .where('token_digest', '=', sha256Hex(token))
    .where('expires_at', '>', sql<Date>`now()`)
    .executeTakeFirst();
}

export type ResetResult = { ok: true; username: string } | { ok: false; reason: 'invalid_token' };

/**
 * Set a new password with a reset token. The password's own problems are field errors
 * (DomainError with `details.password` / `details.password_confirmation`), thrown before the token
 * is spent, so the person can correct the form and use the same link.
 */
export async function resetPassword(
  db: DbOrTrx,
  input: { token: string; password: string; confirmation: string; mail: MailSettings; ipAddress?: string },
): Promise<ResetResult> {
  if (!(await findResetTokenUser(db, input.token))) return { ok: false, reason: 'invalid_token' };
  const problem = passwordProblem(input.password);
  if (problem) throw invalid(problem, { password: [problem.replace(/^password /, '')] });
  if (input.password !== input.confirmation)
    throw invalid('password confirmation doesn’t match', { password_confirmation: ['doesn’t match the new password'] });
  const passwordHash = await hashPassword(input.password); // before the transaction: see createUser
  return withTransaction(db, async (trx) => {
    // Spent here, atomically: of two concurrent uses of one link, one wins.
    const spent = await trx
      .deleteFrom('password_reset_tokens')
      .where('token_digest', '=', sha256Hex(input.token))
      .where('expires_at', '>', sql<Date>`now()`)
      .returning('user_id')
      .executeTakeFirst();
    if (!spent) return { ok: false, reason: 'invalid_token' } as const;
    const user = await storePasswordHash(trx, spent.user_id, passwordHash);
    await enqueueSecurityAlert(trx, user, { kind: 'password_reset' }, input.mail);
    await recordAudit(trx, {
      actor: `user:${user.username}`,
      ipAddress: input.ipAddress,
      action: 'user.reset_password',
      targetType: 'user',
      targetId: user.id,
    });
    return { ok: true, username: user.username } as const;
  });
}

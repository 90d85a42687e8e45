// The credential check shared by the sign-in form and the password grant: rate limit per client
// address, lock per account (10 consecutive failures → 10 minutes), blocked users, rehash on
// login. Every refusal looks the same to the caller's client: only `reason` (for logs/tests) differs.
import { sql } from 'kysely';
import type { DbOrTrx, User } from '../db/schema';
import { hashPassword, needsRehash, verifyPassword } from './passwords';
import { addressThrottle, recordAddressFailure, type Throttle } from './rate-limit';
import type { KeyRing } from './service-keys';
import { verifyTotp } from './totp';
import { consumeRecoveryCode, looksLikeRecoveryCode } from './two-factor';
import { openTotpSecret, sealTotpSecret } from './totp-secrets';
import { findUserById, findUserByLogin } from './users';

export const ACCOUNT_FAILURE_LIMIT = 10;
export const ACCOUNT_LOCK_SECONDS = 600;

export type CredentialResult =
  | { ok: true; user: User }
  | { ok: false; reason: 'invalid' | 'locked' | 'blocked' }
  | { ok: false; reason: 'rate_limited'; retryAfter: number; throttle: Throttle };

export interface PasswordCheckInput {
  login: string;
  password: string;
  /** The client address (request.ip), for the per-address limit. */
  address: string;
}

const isLocked = (user: Pick<User, 'locked_until'>, now = Date.now()) =>
  user.locked_until !== null && user.locked_until.getTime() > now;

/** Check a login (username or e-mail) and password. Always spends one password hash of work. */
export async function checkPassword(db: DbOrTrx, input: PasswordCheckInput): Promise<CredentialResult> {
  const throttle = await addressThrottle(db, input.address);
  if (throttle) return { ok: false, reason: 'rate_limited', retryAfter: throttle.retryAfter, throttle };
  const user = input.login ? await findUserByLogin(db, input.login) : undefined;
  // Verify even without a user (against a dummy hash): "no such user" costs the same time.
  const passwordOk = await verifyPassword(input.password, user?.password_hash);
  if (!user) {
    await recordAddressFailure(db, input.address);
    return { ok: false, reason: 'invalid' };
  }
  if (isLocked(user)) {
    // A correct password fails too while locked, with the same generic error.
    await recordAddressFailure(db, input.address);
    return { ok: false, reason: 'locked' };
  }
  if (!passwordOk) {
    await recordAccountFailure(db, user.id);
    await recordAddressFailure(db, input.address);
    return { ok: false, reason: 'invalid' };
  }
  // The right password for a blocked user: refused, but not a failed guess (not counted).
  if (user.state !== 'active') return { ok: false, reason: 'blocked' };
  return { ok: true, user: await afterGoodPassword(db, user, input.password) };
}

/** Where the TOTP sealing keys come from; `refresh` reloads after a rotation made elsewhere. */
export interface KeyRingLoader {
  load(): Promise<KeyRing>;
  refresh?(): Promise<KeyRing>;
}

async function openUserSecret(keys: KeyRingLoader, userId: number, stored: string) {
  let ring = await keys.load();
  try {
    return { ring, ...openTotpSecret(ring, userId, stored) };
  } catch (err) {
    // A key rotated in elsewhere (unknown id), or a ring cached from before a key was replaced:
    // reload once and try again.
    if (!keys.refresh) throw err;
    ring = await keys.refresh();
    return { ring, ...openTotpSecret(ring, userId, stored) };
  }
}

export async function checkOtp(
  db: DbOrTrx,
  userId: number,
  code: string,
  address: string,
  keys: KeyRingLoader,
): Promise<CredentialResult> {
  const throttle = await addressThrottle(db, address);
  if (throttle) return { ok: false, reason: 'rate_limited', retryAfter: throttle.retryAfter, throttle };
  const user = await findUserById(db, userId);
  if (!user?.otp_secret) return { ok: false, reason: 'invalid' };
  if (isLocked(user)) {
    await recordAddressFailure(db, address);
    return { ok: false, reason: 'locked' };
  }
  if (user.state !== 'active') return { ok: false, reason: 'blocked' };
  if (looksLikeRecoveryCode(code)) {
    if (await consumeRecoveryCode(db, user.id, code)) return { ok: true, user: await resetFailures(db, user) };
    await recordAccountFailure(db, user.id);
    await recordAddressFailure(db, address);
    return { ok: false, reason: 'invalid' };
  }
  const opened = await openUserSecret(keys, user.id, user.otp_secret);
  const step = verifyTotp(opened.secret, code.trim(), user.otp_last_step === null ? null : Number(user.otp_last_step));
  // The conditional update is the replay guard under concurrency: of two requests with one code,
  // only one moves otp_last_step forward.
  const claimed =
    step !== undefined &&
    (
      await db
        .updateTable('users')
        .set({ otp_last_step: step })
        .where('id', '=', user.id)
        .where((eb) => eb.or([eb('otp_last_step', 'is', null), eb('otp_last_step', '<', step)]))
        .executeTakeFirst()
    ).numUpdatedRows > 0n;
  if (!claimed) {
    await recordAccountFailure(db, user.id);
    await recordAddressFailure(db, address);
    return { ok: false, reason: 'invalid' };
  }
  if (opened.stale) {
    // In clear (enrolled before encryption) or under an older key: sealed under the signing key now.
    await db
      .updateTable('users')
      .set({ otp_secret: sealTotpSecret(opened.ring, user.id, opened.secret) })
      .where('id', '=', user.id)
      .where('otp_secret', '=', user.otp_secret)
      .execute();
  }
  return { ok: true, user: await resetFailures(db, user) };
}

/** One more consecutive failure; the tenth locks the account for ACCOUNT_LOCK_SECONDS. */
async function recordAccountFailure(db: DbOrTrx, userId: number): Promise<void> {
  await sql`
    update users set
      failed_attempts = case when failed_attempts + 1 >= ${ACCOUNT_FAILURE_LIMIT} then 0 else failed_attempts + 1 end,
      locked_until = case when failed_attempts + 1 >= ${ACCOUNT_FAILURE_LIMIT}
        then now() + make_interval(secs => ${ACCOUNT_LOCK_SECONDS}) else locked_until end
    where id = ${userId}
  `.execute(db);
}

async function resetFailures(db: DbOrTrx, user: User): Promise<User> {
  if (user.failed_attempts === 0 && user.locked_until === null) return user;
  await db.updateTable('users').set({ failed_attempts: 0, locked_until: null }).where('id', '=', user.id).execute();
  return { ...user, failed_attempts: 0, locked_until: null };
}

async function afterGoodPassword(db: DbOrTrx, user: User, password: string): Promise<User> {
  // Parameters raised since this hash was made: upgrade it now that we hold the password.
  if (user.password_hash && needsRehash(user.password_hash)) {
    await db
      .updateTable('users')
      .set({ password_hash: await hashPassword(password) })
      .where('id', '=', user.id)
      .execute();
  }
  // Two-factor users reset their failure count only after the second factor.
  return user.otp_secret ? user : resetFailures(db, user);
}

/**
 * Re-check the signed-in user's own password before a sensitive change (2FA, password): the same
 * per-address limit and account lock as the sign-in form.
 */
export const checkCurrentPassword = (db: DbOrTrx, user: Pick<User, 'username'>, password: string, address: string) =>
  checkPassword(db, { login: user.username, password, address });

/** Record a completed sign-in (web form). */
export async function recordSignIn(db: DbOrTrx, userId: number): Promise<void> {
  await sql`update users set last_sign_in_at = current_sign_in_at, current_sign_in_at = now() where id = ${userId}`.execute(
    db,
  );
}

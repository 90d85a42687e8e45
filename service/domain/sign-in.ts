// The credential check shared by the sign-in form and the password grant: rate limit per client
// address, lock per account (10 consecutive failures → 10 minutes), blocked users, rehash on
// login. Every refusal looks the same to the caller's client: only `reason` (for logs/tests) differs.
import { sql } from 'kysely';
import type { DbOrTrx, User } from '../db/schema';
import { hashPassword, needsRehash, verifyPassword } from './passwords';
import { rowPicker } from '../db/row-picker';
import { statementTemplates } from '../db/statement-templates';
import {
  type Admission,
  type AdmissionColumns,
  type AdmissionSlot,
  addressLimit,
  admissionCte,
  admissionOf,
  admissionValues,
  type Reservation,
  reserveAccountAttempt,
  reserveAttempt,
  settleSuccess,
  type Throttle,
} from './rate-limit';
import type { KeyRing } from './service-keys';
import { verifyTotp } from './totp';
import { consumeRecoveryCode, looksLikeRecoveryCode } from './two-factor';
import { openTotpSecret, sealTotpSecret } from './totp-secrets';
import { findUserById, loginKey, twoFactorEnabled, USER_COLUMNS, userByLoginKey } from './users';

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

const rateLimited = (throttle: Throttle): CredentialResult => ({
  ok: false,
  reason: 'rate_limited',
  retryAfter: throttle.retryAfter,
  throttle,
});

/**
 * Check a login (username or e-mail) and password. Always spends one password hash of work. The
 * attempt is reserved on the address, then on the account, before the password is checked
 * (rate-limit.ts): a refusal or a wrong password leaves the reservations standing as the failure.
 */
export async function checkPassword(db: DbOrTrx, input: PasswordCheckInput): Promise<CredentialResult> {
  const { admission, user } = await admitPasswordAttempt(db, input);
  if (!admission.ok) return rateLimited(admission.throttle);
  const reservation: Reservation = admission.reservation;
  // A locked account (or no such user) is checked against a dummy hash, so every refusal costs
  // the same time; a correct password fails too while locked, with the same generic error.
  const passwordOk = await verifyPassword(input.password, reservation.account ? user?.password_hash : undefined);
  if (!user) return { ok: false, reason: 'invalid' };
  if (!reservation.account) return { ok: false, reason: 'locked' };
  if (!passwordOk) return { ok: false, reason: 'invalid' };
  // The right password for a blocked user: refused, but not a failed guess (not counted).
  if (user.state !== 'active') {
    await settleSuccess(db, reservation);
    return { ok: false, reason: 'blocked' };
  }
  // Two-factor users clear their failures only after the second factor.
  const clearAccount = !twoFactorEnabled(user);
  await settleSuccess(db, reservation, { clearAccount });
  return { ok: true, user: await afterGoodPassword(db, clearAccount ? clearedView(user) : user, input.password) };
}

// One statement (db/statement-templates.ts) where there were two round trips (the address's
// reservation, then the user): each cost the event loop and PostgreSQL more than the statement's
// own work, and the password grant runs beside the API's requests (docs/benchmarks.md). The
// account's reservation stays a statement of its own (rate-limit.ts admissionCte: one statement
// locking the counter and the user's row could deadlock with a settlement).
const admissions = statementTemplates<AdmissionSlot | 'login'>(1);
const userOfAdmission = rowPicker<User>(USER_COLUMNS);

/**
 * Reserve the attempt on the address and read the user the login names, in one statement; then,
 * when admitted, reserve the attempt on that account: both before the password is checked, and
 * nothing held when the address is refused.
 */
async function admitPasswordAttempt(
  db: DbOrTrx,
  input: PasswordCheckInput,
): Promise<{ admission: Admission; user: User | undefined }> {
  const limit = addressLimit(input.address);
  const values = admissionValues(limit) as Record<AdmissionSlot | 'login', unknown>;
  // No login: no user (a key no username or address has).
  values.login = input.login ? loginKey(input.login) : null;
  const { rows } = await admissions.run<User & AdmissionColumns>(db, 'password', values, (slot) => {
    const { cte, columns } = admissionCte(slot);
    return sql`with found as ${userByLoginKey(db, slot('login'))}, ${cte}
      select ${sql.join(USER_COLUMNS.map((c) => sql.ref(`f.${c}`)))}, ${columns}
      from (select) as one left join found f on true`;
  });
  const row = rows[0];
  const user = row.id === null ? undefined : userOfAdmission(row);
  const admission = admissionOf(limit, row);
  if (admission.ok && user) admission.reservation.account = await reserveAccountAttempt(db, user.id);
  return { admission, user };
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
  const user = await findUserById(db, userId);
  // Recovery codes also stand in for a passkey or security key (a user may have no TOTP secret).
  if (!user || !twoFactorEnabled(user)) return { ok: false, reason: 'invalid' };
  if (user.state !== 'active') return { ok: false, reason: 'blocked' };
  // Reserved before the code is checked, like a password (rate-limit.ts).
  const admission = await reserveAttempt(db, [addressLimit(address)]);
  if (!admission.ok) return rateLimited(admission.throttle);
  const reservation: Reservation = admission.reservation;
  reservation.account = await reserveAccountAttempt(db, user.id);
  if (!reservation.account) return { ok: false, reason: 'locked' };
  if (looksLikeRecoveryCode(code)) {
    if (!(await consumeRecoveryCode(db, user.id, code))) return { ok: false, reason: 'invalid' };
    await settleSuccess(db, reservation, { clearAccount: true });
    return { ok: true, user: clearedView(user) };
  }
  if (!user.otp_secret) return { ok: false, reason: 'invalid' };
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
  if (!claimed) return { ok: false, reason: 'invalid' };
  if (opened.stale) {
    // In clear (enrolled before encryption) or under an older key: sealed under the signing key now.
    await db
      .updateTable('users')
      .set({ otp_secret: sealTotpSecret(opened.ring, user.id, opened.secret) })
      .where('id', '=', user.id)
      .where('otp_secret', '=', user.otp_secret)
      .execute();
  }
  await settleSuccess(db, reservation, { clearAccount: true });
  return { ok: true, user: clearedView(user) };
}

/** The user as a success leaves it (failures before it cleared; the row is the truth). */
const clearedView = (user: User): User => ({ ...user, failed_attempts: 0, locked_until: null });

async function afterGoodPassword(db: DbOrTrx, user: User, password: string): Promise<User> {
  // Parameters raised since this hash was made: upgrade it now that we hold the password.
  if (user.password_hash && needsRehash(user.password_hash)) {
    await db
      .updateTable('users')
      .set({ password_hash: await hashPassword(password) })
      .where('id', '=', user.id)
      .execute();
  }
  return user;
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

// Users: creation, look-up by username or e-mail, passwords, blocking, e-mails, 2FA.
import { sql } from 'kysely';
import { withTransaction } from '../db/transaction';
import type { DbOrTrx, User } from '../db/schema';
import { recordAudit } from './audit';
import { isValidEmail } from './email-address';
import { invalid, invalidField, notFound, uniqueViolation } from './errors';
import { hashPassword, passwordProblem } from './passwords';
import type { KeyRing } from './service-keys';
import { newTotpSecret, otpauthUri } from './totp';
import { disableTwoFactor, storeTotpSecret } from './two-factor';
import { addEmail } from './emails';
import type { MailSettings } from './mail/account-messages';
import { enqueueSecurityAlert } from './security-alerts';
import { deleteUserSessions } from './sessions';

const USERNAME_RE = /^[A-Za-z0-9_][A-Za-z0-9_.-]{0,254}$/;

/**
 * Every column of a user row, named (never selectAll/returningAll): a column added to `users` is not
 * read until it is listed here. The credential columns are named apart so their reach stays visible;
 * sign-in and 2FA need them, the API reads users through API_USER_COLUMNS (access-tokens.ts) instead.
 */
export const USER_CREDENTIAL_COLUMNS = ['password_hash', 'otp_secret', 'otp_last_step', 'failed_attempts'] as const;
/** The user columns that hold no credential and may be shown (the API's /user, token look-ups). */
export const PUBLIC_USER_COLUMNS = [
  'id',
  'username',
  'email',
  'name',
  'is_admin',
  'state',
  'bio',
  'public_email',
  'avatar_url',
  'external',
  'private_profile',
  'can_create_group',
  'can_create_project',
  'locked_until',
  'confirmed_at',
  'current_sign_in_at',
  'last_sign_in_at',
  'created_at',
] as const;
export const USER_COLUMNS = [
  ...PUBLIC_USER_COLUMNS,
  'updated_at',
  'webauthn_credential_count',
  'otp_enrolment_required',
  ...USER_CREDENTIAL_COLUMNS,
] as const;

export { isValidEmail };

const UNIQUE_MESSAGES = {
  users_username_lower: 'username has already been taken',
  users_email_lower: 'email has already been taken',
  user_emails_email_lower: 'email has already been taken',
};

export interface CreateUserInput {
  username: string;
  email: string;
  name?: string;
  password: string;
  isAdmin?: boolean;
  actor?: string;
}

export async function createUser(db: DbOrTrx, input: CreateUserInput): Promise<User> {
  const username = input.username.trim();
  const email = input.email.trim();
  if (!USERNAME_RE.test(username)) {
    throw invalid(
      `username "${username}" is invalid: use letters, digits, '_', '-' and '.', starting with a letter, digit or '_'`,
    );
  }
  if (!isValidEmail(email)) throw invalid(`email "${email}" is invalid`);
  const problem = passwordProblem(input.password);
  if (problem) throw invalidField('password', `password ${problem}`);
  // Hash before the transaction opens: ~0.4 s that should not hold a database connection.
  const passwordHash = await hashPassword(input.password);
  return withTransaction(db, async (trx) => {
    if (await isEmailTaken(trx, email)) throw invalid('email has already been taken');
    try {
      const user = await trx
        .insertInto('users')
        .values({
          username,
          email,
          name: input.name?.trim() || username,
          password_hash: passwordHash,
          is_admin: input.isAdmin ?? false,
        })
        .returning(USER_COLUMNS)
        .executeTakeFirstOrThrow();
      await recordAudit(trx, {
        actor: input.actor ?? 'system',
        action: 'user.create',
        targetType: 'user',
        targetId: user.id,
        details: { username },
      });
      return user;
    } catch (err) {
      throw uniqueViolation(err, UNIQUE_MESSAGES) ?? err;
    }
  });
}

/** Whether any account (this one included) has the address, primary or secondary, in any case. */
export async function isEmailTaken(db: DbOrTrx, email: string): Promise<boolean> {
  const hit = await db
    .selectFrom('users')
    .select('id')
    .where((eb) => eb(eb.fn('lower', ['email']), '=', email.toLowerCase()))
    .unionAll(
      db
        .selectFrom('user_emails')
        .select('user_id as id')
        .where((eb) => eb(eb.fn('lower', ['email']), '=', email.toLowerCase())),
    )
    .executeTakeFirst();
  return hit !== undefined;
}

export const findUserById = (db: DbOrTrx, id: number): Promise<User | undefined> =>
  db.selectFrom('users').select(USER_COLUMNS).where('id', '=', id).executeTakeFirst();

export const findUserByUsername = (db: DbOrTrx, username: string): Promise<User | undefined> =>
  db
    .selectFrom('users')
    .select(USER_COLUMNS)
    .where((eb) => eb(eb.fn('lower', ['username']), '=', username.toLowerCase()))
    .executeTakeFirst();

/** Sign-in identifier: a username or the primary e-mail, case-insensitively (spaces around ignored). */
export const loginKey = (login: string): string => login.trim().toLowerCase();

/**
 * The user a login key (loginKey) names by its username or its e-mail address, as a query to
 * embed: the sign-in's admission statement (sign-in.ts) reads it with the attempt's reservations.
 */
export const userByLoginKey = (db: DbOrTrx, key: unknown) =>
  db
    .selectFrom('users')
    .select(USER_COLUMNS)
    .where((eb) => eb.or([eb(eb.fn('lower', ['username']), '=', key), eb(eb.fn('lower', ['email']), '=', key)]))
    // A literal: the admission statement's template takes no parameter but its slots.
    .limit(sql<number>`1`);

export async function getUserByUsername(db: DbOrTrx, username: string): Promise<User> {
  const user = await findUserByUsername(db, username);
  if (!user) throw notFound(`user "${username}" not found`);
  return user;
}

export const listUsers = (db: DbOrTrx): Promise<User[]> =>
  db.selectFrom('users').select(USER_COLUMNS).orderBy('id').execute();

export const countUsers = async (db: DbOrTrx): Promise<number> =>
  Number(
    (
      await db
        .selectFrom('users')
        .select((eb) => eb.fn.countAll().as('n'))
        .executeTakeFirstOrThrow()
    ).n,
  );

export async function setUserState(
  db: DbOrTrx,
  username: string,
  state: 'active' | 'blocked',
  actor = 'system',
  ipAddress?: string,
): Promise<User> {
  return withTransaction(db, async (db) => {
    const user = await getUserByUsername(db, username);
    const updated = await db
      .updateTable('users')
      .set({ state, updated_at: new Date(), ...(state === 'active' ? { failed_attempts: 0, locked_until: null } : {}) })
      .where('id', '=', user.id)
      .returning(USER_COLUMNS)
      .executeTakeFirstOrThrow();
    // A blocked person is signed out of Lanyard and, by back-channel logout, of the applications.
    if (state === 'blocked') await deleteUserSessions(db, user.id, 'blocked');
    await recordAudit(db, {
      actor,
      action: state === 'blocked' ? 'user.block' : 'user.unblock',
      targetType: 'user',
      targetId: user.id,
      ipAddress,
    });
    return updated;
  });
}

export async function setUserPassword(
  db: DbOrTrx,
  username: string,
  password: string,
  actor = 'system',
  /** What the alert needs (PUBLIC_URL, MAIL_FROM); every service and CLI caller passes it (tests may not). */
  mail?: MailSettings,
  /** The password page's own session: its sid lives on in the browser, so it gets no logout tokens. */
  keepSid?: string,
): Promise<User> {
  const problem = passwordProblem(password);
  if (problem) throw invalidField('password', `password ${problem}`);
  const passwordHash = await hashPassword(password); // before the transaction: see createUser
  return withTransaction(db, async (trx) => {
    const user = await getUserByUsername(trx, username);
    const updated = await storePasswordHash(trx, user.id, passwordHash, keepSid);
    if (mail) await enqueueSecurityAlert(trx, updated, { kind: 'password_changed' }, mail);
    await recordAudit(trx, { actor, action: 'user.set_password', targetType: 'user', targetId: user.id });
    return updated;
  });
}

/**
 * What every new password does, in the caller's transaction (the password page, the CLI, a
 * forgotten-password reset): the hash stored, the account lock lifted, every web session of the
 * user ended — whoever knew the old password is signed out (contract §3) — and any
 * forgotten-password link still out there made useless.
 */
export async function storePasswordHash(
  trx: DbOrTrx,
  userId: number,
  passwordHash: string,
  keepSid?: string,
): Promise<User> {
  const updated = await trx
    .updateTable('users')
    .set({ password_hash: passwordHash, failed_attempts: 0, locked_until: null, updated_at: new Date() })
    .where('id', '=', userId)
    .returning(USER_COLUMNS)
    .executeTakeFirstOrThrow();
  await deleteUserSessions(trx, userId, 'password', keepSid);
  await trx.deleteFrom('password_reset_tokens').where('user_id', '=', userId).execute();
  return updated;
}

/**
 * A secondary e-mail added by an operator (`users add-email`): confirmed at once when the operator
 * vouches for it (the default here, as the fixtures use it), else a confirmation link is mailed.
 * The rules are addEmail's (emails.ts).
 */
export async function addUserEmail(
  db: DbOrTrx,
  username: string,
  email: string,
  actor = 'system',
  options: { confirmed?: boolean; mail?: MailSettings } = {},
): Promise<User> {
  return withTransaction(db, async (trx) => {
    const user = await getUserByUsername(trx, username);
    await addEmail(trx, user, email, { actor, mail: options.mail, confirmed: options.confirmed ?? true });
    return user;
  });
}

/**
 * The addresses that may receive notifications: the primary when confirmed, and the confirmed
 * secondary ones (contract §7: only confirmed addresses). Primary first.
 */
export async function verifiedEmails(db: DbOrTrx, user: Pick<User, 'id'>): Promise<string[]> {
  const rows = await db
    .selectFrom('users')
    .select(['email', sql<number>`0`.as('position')])
    .where('id', '=', user.id)
    .where('confirmed_at', 'is not', null)
    .unionAll(
      db
        .selectFrom('user_emails')
        .select(['email', 'id as position'])
        .where('user_id', '=', user.id)
        .where('confirmed_at', 'is not', null),
    )
    .orderBy('position')
    .execute();
  return rows.map((r) => r.email);
}

/** Every user's secondary e-mails, by user id (the CLI's `users list`). */
export async function secondaryEmailsByUser(db: DbOrTrx): Promise<Map<number, string[]>> {
  const rows = await db.selectFrom('user_emails').select(['user_id', 'email']).orderBy('id').execute();
  const byUser = new Map<number, string[]>();
  for (const { user_id, email } of rows) byUser.set(user_id, [...(byUser.get(user_id) ?? []), email]);
  return byUser;
}

export async function listUserEmails(db: DbOrTrx, userId: number): Promise<string[]> {
  const rows = await db.selectFrom('user_emails').select('email').where('user_id', '=', userId).orderBy('id').execute();
  return rows.map((r) => r.email);
}

export interface TwoFactorResult {
  user: User;
  otpSecret?: string;
  otpauthUri?: string;
}

export async function setTwoFactor(
  db: DbOrTrx,
  username: string,
  on: boolean,
  actor = 'system',
  /** The service key ring that seals the secret (LANYARD_HOME's file locally; deployed: Secrets Manager's). */
  keyRing?: KeyRing,
  /** What the security alert needs, PUBLIC_URL and MAIL_FROM (turning 2FA off alerts the account). */
  mail?: MailSettings,
): Promise<TwoFactorResult> {
  return withTransaction(db, async (db) => {
    const user = await getUserByUsername(db, username);
    if (!on) {
      // The same rule as the account page's Disable: the secret and every recovery code go together.
      await disableTwoFactor(db, user.id, { actor, mail });
      return { user: await getUserByUsername(db, username) };
    }
    const secret = newTotpSecret();
    // Sealed at rest by the same enrolment as the account page's; the clear secret is shown once,
    // to the enrolling admin.
    if (!keyRing) throw new Error('enrolling a TOTP secret needs the service key ring');
    await storeTotpSecret(db, keyRing, user.id, secret, { lastStep: null, onlyIfNotEnrolled: false });
    const updated = await getUserByUsername(db, username);
    await recordAudit(db, { actor, action: 'user.enable_2fa', targetType: 'user', targetId: user.id });
    return { user: updated, otpSecret: secret, otpauthUri: otpauthUri(secret, updated.email) };
  });
}

/**
 * `users set-2fa U on --require-enrolment`: the person enrols their own authenticator at their next
 * sign-in (after the password, before anything else: routes/web/sign-in.tsx). Any secret and
 * recovery codes they had go (the same rule as Disable); sessions they hold end, so the next
 * request is that sign-in. Enrolling clears the flag (storeTotpSecret).
 */
export async function requireTwoFactorEnrolment(db: DbOrTrx, username: string, actor = 'system'): Promise<User> {
  return withTransaction(db, async (db) => {
    const user = await getUserByUsername(db, username);
    if (twoFactorEnabled(user)) await disableTwoFactor(db, user.id, { actor });
    await db
      .updateTable('users')
      .set({ otp_enrolment_required: true, updated_at: new Date() })
      .where('id', '=', user.id)
      .execute();
    await deleteUserSessions(db, user.id, 'revoked');
    await recordAudit(db, { actor, action: 'user.require_2fa_enrolment', targetType: 'user', targetId: user.id });
    return getUserByUsername(db, username);
  });
}

/**
 * The one rule of "has two-factor authentication": a TOTP secret or at least one WebAuthn
 * credential (recovery codes come and go with these). twoFactorEnabledSql is the same rule for a
 * statement that reads `users` as `alias`.
 */
export const twoFactorEnabled = (user: Pick<User, 'otp_secret' | 'webauthn_credential_count'>): boolean =>
  user.otp_secret !== null || user.webauthn_credential_count > 0;
export const twoFactorEnabledSql = (alias?: string) => {
  const col = (c: string) => (alias ? sql.ref(`${alias}.${c}`) : sql.ref(c));
  return sql<boolean>`(${col('otp_secret')} is not null or ${col('webauthn_credential_count')} > 0)`;
};

/** Must enrol a TOTP authenticator before signing in (set by an administrator, cleared by enrolling). */
export const twoFactorEnrolmentPending = (user: Pick<User, 'otp_secret' | 'otp_enrolment_required'>): boolean =>
  user.otp_secret === null && user.otp_enrolment_required;

/**
 * A password alone does not sign this person in: they have a second factor, or must enrol one first.
 * (The sign-in form asks for it; the password grant, which cannot, refuses.)
 */
export const needsSecondFactor = (
  user: Pick<User, 'otp_secret' | 'otp_enrolment_required' | 'webauthn_credential_count'>,
): boolean => twoFactorEnabled(user) || twoFactorEnrolmentPending(user);

/** The admin-facing view of a user (CLI output). Never includes a credential column. */
export function userSummary(user: User, emails: string[] = []) {
  return {
    id: user.id,
    username: user.username,
    email: user.email,
    name: user.name,
    state: user.state,
    is_admin: user.is_admin,
    two_factor_enabled: twoFactorEnabled(user),
    emails,
    created_at: user.created_at.toISOString(),
  };
}

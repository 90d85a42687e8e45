// Users: creation, look-up by username or e-mail, passwords, blocking, e-mails, 2FA.
import { withTransaction } from '../db/transaction';
import type { DbOrTrx, User } from '../db/schema';
import { recordAudit } from './audit';
import { invalid, notFound, uniqueViolation } from './errors';
import { hashPassword, passwordProblem } from './passwords';
import type { KeyRing } from './service-keys';
import { newTotpSecret, otpauthUri } from './totp';
import { disableTwoFactor, storeTotpSecret } from './two-factor';
import { deleteUserSessions } from './sessions';

const USERNAME_RE = /^[A-Za-z0-9_][A-Za-z0-9_.-]{0,254}$/;
const EMAIL_RE = /^[^@\s]+@[^@\s]+\.[^@\s]+$/;

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
export const USER_COLUMNS = [...PUBLIC_USER_COLUMNS, 'updated_at', ...USER_CREDENTIAL_COLUMNS] as const;

export const isValidEmail = (email: string): boolean => EMAIL_RE.test(email) && email.length <= 254;

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
  if (problem) throw invalid(problem);
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

async function isEmailTaken(db: DbOrTrx, email: string): Promise<boolean> {
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

/** Sign-in identifier: a username or the primary e-mail, case-insensitively. */
export const findUserByLogin = (db: DbOrTrx, login: string): Promise<User | undefined> => {
  const key = login.trim().toLowerCase();
  return db
    .selectFrom('users')
    .select(USER_COLUMNS)
    .where((eb) => eb.or([eb(eb.fn('lower', ['username']), '=', key), eb(eb.fn('lower', ['email']), '=', key)]))
    .executeTakeFirst();
};

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
): Promise<User> {
  return withTransaction(db, async (db) => {
    const user = await getUserByUsername(db, username);
    const updated = await db
      .updateTable('users')
      .set({ state, updated_at: new Date(), ...(state === 'active' ? { failed_attempts: 0, locked_until: null } : {}) })
      .where('id', '=', user.id)
      .returning(USER_COLUMNS)
      .executeTakeFirstOrThrow();
    await recordAudit(db, {
      actor,
      action: state === 'blocked' ? 'user.block' : 'user.unblock',
      targetType: 'user',
      targetId: user.id,
    });
    return updated;
  });
}

export async function setUserPassword(
  db: DbOrTrx,
  username: string,
  password: string,
  actor = 'system',
): Promise<User> {
  const problem = passwordProblem(password);
  if (problem) throw invalid(problem);
  const passwordHash = await hashPassword(password); // before the transaction: see createUser
  return withTransaction(db, async (trx) => {
    const user = await getUserByUsername(trx, username);
    const updated = await trx
      .updateTable('users')
      .set({ password_hash: passwordHash, failed_attempts: 0, locked_until: null, updated_at: new Date() })
      .where('id', '=', user.id)
      .returning(USER_COLUMNS)
      .executeTakeFirstOrThrow();
    // A new password ends every web session of the user in the same transaction: whoever knew the
    // old one is signed out (contract §3), and a failure leaves neither half done.
    await deleteUserSessions(trx, user.id);
    await recordAudit(trx, { actor, action: 'user.set_password', targetType: 'user', targetId: user.id });
    return updated;
  });
}

/** Adds a verified secondary e-mail (an operator vouches for it). */
export async function addUserEmail(db: DbOrTrx, username: string, email: string, actor = 'system'): Promise<User> {
  return withTransaction(db, async (db) => {
    const address = email.trim();
    if (!isValidEmail(address)) throw invalid(`email "${address}" is invalid`);
    const user = await getUserByUsername(db, username);
    if (await isEmailTaken(db, address)) throw invalid('email has already been taken');
    try {
      await db
        .insertInto('user_emails')
        .values({ user_id: user.id, email: address, confirmed_at: new Date() })
        .execute();
    } catch (err) {
      throw uniqueViolation(err, UNIQUE_MESSAGES) ?? err;
    }
    await recordAudit(db, {
      actor,
      action: 'user.add_email',
      targetType: 'user',
      targetId: user.id,
      details: { email: address },
    });
    return user;
  });
}

/** Primary plus verified secondary e-mails. */
export async function verifiedEmails(db: DbOrTrx, user: Pick<User, 'id' | 'email'>): Promise<string[]> {
  const rows = await db
    .selectFrom('user_emails')
    .select('email')
    .where('user_id', '=', user.id)
    .where('confirmed_at', 'is not', null)
    .orderBy('id')
    .execute();
  return [user.email, ...rows.map((r) => r.email)];
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
): Promise<TwoFactorResult> {
  return withTransaction(db, async (db) => {
    const user = await getUserByUsername(db, username);
    if (!on) {
      // The same rule as the account page's Disable: the secret and every recovery code go together.
      await disableTwoFactor(db, user.id, { actor });
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

export const twoFactorEnabled = (user: Pick<User, 'otp_secret'>): boolean => user.otp_secret !== null;

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

// A user's e-mail addresses: the primary one (users.email) and secondary ones (user_emails). An
// address is added unconfirmed with a confirmation link mailed to it (or confirmed at once when an
// operator vouches for it), confirmed by that link, removed, or made primary. Only confirmed
// addresses may become primary or a notification e-mail (verifiedEmails in users.ts is that list).
// Confirmation tokens are random 256-bit values stored only as SHA-256 digests, one live token per
// address (a resend replaces it), valid CONFIRMATION_VALID_HOURS.
import { sql } from 'kysely';
import { withTransaction } from '../db/transaction';
import type { DbOrTrx, User } from '../db/schema';
import { recordAudit } from './audit';
import { isSingleMailbox } from './email-address';
import { type Page, windowPage } from './page';
import { conflict, invalid, notFound, RateLimitedError } from './errors';
import { confirmEmailMessage, type MailSettings } from './mail/account-messages';
import { enqueueMail } from './mail/outbox';
import { reserveAttempt } from './rate-limit';
import { randomHex, sha256Hex } from './secrets';
import { enqueueSecurityAlert } from './security-alerts';
import { isEmailTaken } from './users';

const CONFIRMATION_VALID_HOURS = 24;
export const MAX_EMAIL_LENGTH = 254;

export interface AccountEmail {
  /** The user_emails id; null for the primary address (it lives on the user row). */
  id: number | null;
  email: string;
  primary: boolean;
  confirmedAt: Date | null;
  confirmationSentAt: Date | null;
}

export interface ChangeContext {
  actor: string;
  ipAddress?: string;
  /** What the mails need (PUBLIC_URL, MAIL_FROM). Every service and CLI caller passes it; only test fixtures do not. */
  mail?: MailSettings;
}

const requireMail = (ctx: ChangeContext): MailSettings => {
  if (!ctx.mail) throw new Error('a confirmation e-mail needs the public URL for its link');
  return ctx.mail;
};

type Owner = Pick<User, 'id' | 'email' | 'name' | 'username' | 'confirmed_at'>;

const primaryOf = (user: Owner): AccountEmail => ({
  id: null,
  email: user.email,
  primary: true,
  confirmedAt: user.confirmed_at,
  confirmationSentAt: null,
});

const secondaryOf = (r: {
  id: number;
  email: string;
  confirmed_at: Date | null;
  confirmation_sent_at: Date | null;
}): AccountEmail => ({
  id: r.id,
  email: r.email,
  primary: false,
  confirmedAt: r.confirmed_at,
  confirmationSentAt: r.confirmation_sent_at,
});

/** How many secondary addresses the user has (the overview's "Other emails"), counted in SQL. */
export async function countSecondaryEmails(db: DbOrTrx, user: Pick<User, 'id'>): Promise<number> {
  const { n } = await db
    .selectFrom('user_emails')
    .select((eb) => eb.fn.countAll<string>().as('n'))
    .where('user_id', '=', user.id)
    .executeTakeFirstOrThrow();
  return Number(n);
}

/**
 * The e-mails page: the primary address first, then the secondary ones in the order they were
 * added, 20 a page, with its total in the same statement. The primary address is the list's
 * first row (it lives on the user row), so the first page holds it and one secondary fewer, and
 * every later window starts one secondary earlier.
 */
export async function listAccountEmailsPage(
  db: DbOrTrx,
  user: Owner,
  { limit, offset }: { limit: number; offset: number },
): Promise<Page<AccountEmail>> {
  const mine = db.selectFrom('user_emails').where('user_id', '=', user.id);
  const start = Math.max(0, offset - 1);
  const rows = await mine
    .select(['id', 'email', 'confirmed_at', 'confirmation_sent_at', sql<string>`count(*) over ()`.as('total')])
    .orderBy('id')
    .limit(offset === 0 ? limit - 1 : limit)
    .offset(start)
    .execute();
  const secondary = await windowPage(
    rows,
    async () => (await mine.select((eb) => eb.fn.countAll().as('n')).executeTakeFirstOrThrow()).n,
    start,
  );
  return {
    total: secondary.total + 1,
    rows: [...(offset === 0 ? [primaryOf(user)] : []), ...secondary.rows.map(secondaryOf)],
  };
}

/** One of the user's secondary addresses by its id (the remove confirm page), or undefined. */
export async function findAccountEmail(db: DbOrTrx, user: Pick<User, 'id'>, id: number) {
  const row = await db
    .selectFrom('user_emails')
    .select(['id', 'email', 'confirmed_at', 'confirmation_sent_at'])
    .where('user_id', '=', user.id)
    .where('id', '=', id)
    .executeTakeFirst();
  return row && secondaryOf(row);
}

/** What may be added: one mailbox, at most MAX_EMAIL_LENGTH characters. Errors name the field `email`. */
function requireAddress(input: string): string {
  const address = input.trim();
  if (address === '') throw invalid('email can’t be blank', { email: ['can’t be blank'] });
  const tooLong = `is too long (maximum is ${MAX_EMAIL_LENGTH} characters)`;
  if (address.length > MAX_EMAIL_LENGTH) throw invalid(`email ${tooLong}`, { email: [tooLong] });
  if (!isSingleMailbox(address)) throw invalid(`email "${address}" is invalid`, { email: ['is invalid'] });
  return address;
}

/**
 * Confirmation links mailed per account and hour: enough to fix a typo or a lost mail, too few to
 * use the page to flood someone else's mailbox.
 */
const CONFIRMATION_MAILS_PER_HOUR = 10;

async function issueConfirmation(
  trx: DbOrTrx,
  owner: Pick<User, 'id' | 'name'>,
  emailId: number,
  email: string,
  mail: MailSettings,
): Promise<void> {
  const key = `confirmation:user:${owner.id}`;
  // Every link sent counts (the reservation is never given back), so concurrent adds cannot pass it.
  const admission = await reserveAttempt(trx, [{ key, limit: CONFIRMATION_MAILS_PER_HOUR, windowSeconds: 3600 }]);
  if (!admission.ok) throw new RateLimitedError(admission.throttle.retryAfter);
  const token = randomHex();
  await trx
    .updateTable('user_emails')
    .set({ confirmation_digest: sha256Hex(token), confirmation_sent_at: new Date() })
    .where('id', '=', emailId)
    .execute();
  const message = confirmEmailMessage(mail, owner.name, email, token, CONFIRMATION_VALID_HOURS);
  await enqueueMail(trx, { to: email, ...message, kind: 'email_confirmation' });
}

/**
 * Add a secondary address. Unconfirmed (the usual case): a confirmation link goes to the new
 * address. `confirmed`: an operator vouches for it. Either way the primary address is told
 * (not the new one: whoever added it may control that one).
 */
export async function addEmail(
  db: DbOrTrx,
  user: Owner,
  input: string,
  ctx: ChangeContext & { confirmed?: boolean },
): Promise<AccountEmail> {
  const email = requireAddress(input);
  return withTransaction(db, async (trx) => {
    if (await isEmailTaken(trx, email))
      throw invalid('email has already been taken', { email: ['has already been taken'] });
    let row: { id: number; confirmed_at: Date | null };
    try {
      row = await trx
        .insertInto('user_emails')
        .values({ user_id: user.id, email, confirmed_at: ctx.confirmed ? new Date() : null })
        .returning(['id', 'confirmed_at'])
        .executeTakeFirstOrThrow();
    } catch (err) {
      // Two requests adding one address at once: the unique index decides, with the same message.
      if ((err as { code?: string }).code === '23505')
        throw invalid('email has already been taken', { email: ['has already been taken'] });
      throw err;
    }
    if (!ctx.confirmed) await issueConfirmation(trx, user, row.id, email, requireMail(ctx));
    if (ctx.mail) await enqueueSecurityAlert(trx, user, { kind: 'email_added', email }, ctx.mail);
    await recordAudit(trx, {
      actor: ctx.actor,
      ipAddress: ctx.ipAddress,
      action: 'user.add_email',
      targetType: 'user',
      targetId: user.id,
      details: { email, confirmed: Boolean(ctx.confirmed) },
    });
    return {
      id: row.id,
      email,
      primary: false,
      confirmedAt: row.confirmed_at,
      confirmationSentAt: ctx.confirmed ? null : new Date(),
    };
  });
}

/** One of the user's secondary addresses, locked; not found for anyone else's. */
async function lockOwnEmail(trx: DbOrTrx, userId: number, emailId: number) {
  const row = await trx
    .selectFrom('user_emails')
    .select(['id', 'email', 'confirmed_at'])
    .where('id', '=', emailId)
    .where('user_id', '=', userId)
    .forUpdate()
    .executeTakeFirst();
  if (!row) throw notFound('That e-mail address was not found.');
  return row;
}

/** A new confirmation link for an unconfirmed address (the old link stops working). */
export async function resendConfirmation(db: DbOrTrx, user: Owner, emailId: number, ctx: ChangeContext) {
  return withTransaction(db, async (trx) => {
    const row = await lockOwnEmail(trx, user.id, emailId);
    if (row.confirmed_at) throw conflict(`${row.email} is already confirmed.`);
    await issueConfirmation(trx, user, row.id, row.email, requireMail(ctx));
    await recordAudit(trx, {
      actor: ctx.actor,
      ipAddress: ctx.ipAddress,
      action: 'user.resend_email_confirmation',
      targetType: 'user',
      targetId: user.id,
      details: { email: row.email },
    });
    return row.email;
  });
}

/**
 * Remove a secondary address. A notification e-mail set to it (global or per group) falls back
 * to the primary address, as GitLab does when an address goes.
 */
export async function removeEmail(db: DbOrTrx, user: Owner, emailId: number, ctx: Omit<ChangeContext, 'mail'>) {
  return withTransaction(db, async (trx) => {
    const row = await lockOwnEmail(trx, user.id, emailId);
    await trx.deleteFrom('user_emails').where('id', '=', row.id).execute();
    await trx
      .updateTable('notification_settings')
      .set({ notification_email: null })
      .where('user_id', '=', user.id)
      .where((eb) => eb(eb.fn('lower', ['notification_email']), '=', row.email.toLowerCase()))
      .execute();
    await recordAudit(trx, {
      actor: ctx.actor,
      ipAddress: ctx.ipAddress,
      action: 'user.remove_email',
      targetType: 'user',
      targetId: user.id,
      details: { email: row.email },
    });
    return row.email;
  });
}

/**
 * Make a confirmed secondary address the primary one: the two trade places (the old primary stays
 * a confirmed secondary address, so nothing that pointed at it breaks), and the old primary is told.
 */
export async function makePrimaryEmail(db: DbOrTrx, user: Owner, emailId: number, ctx: ChangeContext) {
  return withTransaction(db, async (trx) => {
    const row = await lockOwnEmail(trx, user.id, emailId);
    if (!row.confirmed_at) throw conflict(`${row.email} must be confirmed before it can be your primary address.`);
    const current = await trx
      .selectFrom('users')
      .select(['email', 'confirmed_at'])
      .where('id', '=', user.id)
      .forUpdate()
      .executeTakeFirstOrThrow();
    // Both unique indexes (users.email, user_emails.email) hold at every statement: the secondary
    // row takes the old primary address only after the user row has let go of it.
    await trx
      .updateTable('users')
      .set({ email: row.email, confirmed_at: row.confirmed_at, updated_at: new Date() })
      .where('id', '=', user.id)
      .execute();
    await trx
      .updateTable('user_emails')
      .set({ email: current.email, confirmed_at: current.confirmed_at ?? new Date(), confirmation_digest: null })
      .where('id', '=', row.id)
      .execute();
    // Told at the address that stops being primary (GitLab's "Email Changed"): whoever took over
    // the account cannot quietly move its mail elsewhere.
    if (ctx.mail)
      await enqueueSecurityAlert(
        trx,
        { email: current.email, name: user.name, username: user.username },
        { kind: 'primary_email_changed', email: row.email },
        ctx.mail,
      );
    await recordAudit(trx, {
      actor: ctx.actor,
      ipAddress: ctx.ipAddress,
      action: 'user.make_primary_email',
      targetType: 'user',
      targetId: user.id,
      details: { email: row.email, previous: current.email },
    });
    return row.email;
  });
}

export type ConfirmationResult = { ok: true; email: string; userId: number } | { ok: false };

/**
 * Follow a confirmation link: confirms the address when the token is live. Anything else — a
 * tampered or expired token, one already used, one for an address since removed — changes nothing.
 * The look-up is by the token's digest: a timing difference could only reveal a digest prefix,
 * which does not help find a token.
 */
export async function confirmEmail(
  db: DbOrTrx,
  token: string,
  actor = 'confirmation_link',
): Promise<ConfirmationResult> {
  if (!/^[0-9a-f]{64}$/.test(token)) return { ok: false };
  return withTransaction(db, async (trx) => {
    const row = await trx
      .updateTable('user_emails')
      .set({ confirmed_at: new Date(), confirmation_digest: null })
      .where('confirmation_digest', '=', sha256Hex(token))
      .where('confirmed_at', 'is', null)
      .where('confirmation_sent_at', '>', sql<Date>`now() - make_interval(hours => ${CONFIRMATION_VALID_HOURS})`)
      .returning(['user_id', 'email'])
      .executeTakeFirst();
    if (!row) return { ok: false };
    await recordAudit(trx, {
      actor,
      action: 'user.confirm_email',
      targetType: 'user',
      targetId: row.user_id,
      details: { email: row.email },
    });
    return { ok: true, email: row.email, userId: row.user_id };
  });
}

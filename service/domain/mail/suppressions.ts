// The suppression list (table mail_suppressions): addresses that hard-bounced or complained get no
// e-mail until the person (the e-mails page) or an operator (`mail suppressions remove`) clears
// them. One rule, one home: "is this address suppressed?" is `addressNotSuppressed`, an SQL
// predicate that the claim of the sender (outbox.ts) and any bulk insert into the outbox AND in;
// the pages and the CLI read the same table through the functions below.
//
// Every kind of mail is held back, account mail (password resets, security alerts) included: that
// is what SES's account-level suppression list does deployed (SES drops every send to a listed
// address and reports it as a bounce), so the local and deployed behaviour are the same, and a
// mailbox that does not exist cannot read a reset link anyway. Such messages stay in the outbox,
// failed with `last_error` 'suppressed', so `mail list` shows what was held back and why.
import { type Expression, type RawBuilder, sql } from 'kysely';
import type { DbOrTrx } from '../../db/schema';
import { withTransaction } from '../../db/transaction';
import { type AuditActor, recordAudit } from '../audit';
import { isSingleMailbox } from '../email-address';
import { invalid, notFound } from '../errors';

export type SuppressionReason = 'bounce' | 'complaint';

/** The `last_error` of a message the sender held back. */
export const SUPPRESSED_ERROR = 'suppressed';

export interface Suppression {
  address: string;
  reason: SuppressionReason;
  detail: string;
  source: string;
  created_at: Date;
}

const COLUMNS = ['address', 'reason', 'detail', 'source', 'created_at'] as const;

/** The one form an address is kept and compared in: trimmed, lower-cased. */
export const normalizeAddress = (address: string): string => address.trim().toLowerCase();

/**
 * "The address in `column` is not suppressed", for a WHERE clause (a live row, one index probe on
 * mail_suppressions_live). `column` is an expression of the address as written: it is lower-cased
 * here.
 */
export function addressNotSuppressed(column: Expression<string> | RawBuilder<string>): RawBuilder<boolean> {
  return sql<boolean>`not exists (select 1 from mail_suppressions s where s.address = lower(${column}) and s.cleared_at is null)`;
}

/**
 * Record a hard bounce or a complaint. Idempotent: an address already suppressed keeps its first
 * row (SNS delivers at least once; an SMTP bounce may repeat). Audited when it is new.
 * Returns whether a row was written.
 */
export async function recordSuppression(
  db: DbOrTrx,
  input: { address: string; reason: SuppressionReason; detail?: string; source: string },
): Promise<boolean> {
  const address = normalizeAddress(input.address);
  if (!isSingleMailbox(address)) throw invalid(`address must be one e-mail address (got "${input.address}")`);
  return withTransaction(db, async (trx) => {
    const { rows } = await sql<{ id: number }>`
      insert into mail_suppressions (address, reason, detail, source)
      values (${address}, ${input.reason}, ${(input.detail ?? '').slice(0, 1000)}, ${input.source.slice(0, 100)})
      on conflict (address) where cleared_at is null do nothing
      returning id`.execute(trx);
    if (!rows.length) return false;
    await recordAudit(trx, {
      actor: `system:${input.source.slice(0, 100)}`,
      action: 'mail_suppression.create',
      targetType: 'email',
      targetId: address,
      details: { reason: input.reason },
    });
    return true;
  });
}

/** The live suppressions, newest first. */
export async function listSuppressions(db: DbOrTrx, options: { limit?: number } = {}): Promise<Suppression[]> {
  return db
    .selectFrom('mail_suppressions')
    .select(COLUMNS)
    .where('cleared_at', 'is', null)
    .orderBy('created_at', 'desc')
    .orderBy('id', 'desc')
    .limit(options.limit ?? 1000)
    .execute();
}

/** Which of `addresses` are suppressed now, and why (keyed lower-cased), for the e-mails page. */
export async function suppressedAmong(
  db: DbOrTrx,
  addresses: readonly string[],
): Promise<Map<string, SuppressionReason>> {
  if (!addresses.length) return new Map();
  const rows = await db
    .selectFrom('mail_suppressions')
    .select(['address', 'reason'])
    .where('cleared_at', 'is', null)
    .where('address', 'in', addresses.map(normalizeAddress))
    .execute();
  return new Map(rows.map((r) => [r.address, r.reason]));
}

/**
 * The e-mails page's "Resume e-mail": a person clears the suppression of one of their own
 * addresses (the primary one or a secondary one); anyone else's is not_found, like an unknown one.
 */
export async function clearOwnSuppression(
  db: DbOrTrx,
  user: { id: number; email: string },
  address: string,
  audit: AuditActor,
): Promise<Suppression> {
  const normalized = normalizeAddress(address);
  const own =
    normalizeAddress(user.email) === normalized ||
    (await db
      .selectFrom('user_emails')
      .select('id')
      .where('user_id', '=', user.id)
      .where(sql<string>`lower(email)`, '=', normalized)
      .executeTakeFirst()) !== undefined;
  if (!own) throw notFound(`${normalized} is not suppressed`);
  return clearSuppression(db, normalized, audit);
}

/** Clear a suppression (mail goes to the address again), audited. Not suppressed → not_found. */
export async function clearSuppression(db: DbOrTrx, address: string, audit: AuditActor): Promise<Suppression> {
  const normalized = normalizeAddress(address);
  return withTransaction(db, async (trx) => {
    const row = await trx
      .updateTable('mail_suppressions')
      .set({ cleared_at: sql<Date>`now()`, cleared_by: audit.actor })
      .where('address', '=', normalized)
      .where('cleared_at', 'is', null)
      .returning(COLUMNS)
      .executeTakeFirst();
    if (!row) throw notFound(`${normalized} is not suppressed`);
    await recordAudit(trx, {
      ...audit,
      action: 'mail_suppression.clear',
      targetType: 'email',
      targetId: normalized,
      details: { reason: row.reason },
    });
    return row;
  });
}

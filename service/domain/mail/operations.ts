// What operators do with the outbox (`lanyard-admin mail …`): list it, read one message as it
// was sent, and send failed messages again. A retried message keeps its Message-ID and its bytes.
// The back-channel logout outbox has the same states and the same retry (backchannel-logout.ts).
import { sql } from 'kysely';
import type { DbOrTrx, MailStatus } from '../../db/schema';
import { recordAudit } from '../audit';
import { invalid, notFound } from '../errors';

export const MAIL_STATUSES: readonly MailStatus[] = ['pending', 'sending', 'sent', 'failed'];

const SUMMARY_COLUMNS = [
  'id',
  'message_id',
  'kind',
  'to_address',
  'subject',
  'status',
  'attempts',
  'next_attempt_at',
  'last_error',
  'transport_response',
  'created_at',
  'sent_at',
] as const;

export interface MailSummary {
  id: number;
  message_id: string;
  kind: string;
  to_address: string;
  subject: string;
  status: MailStatus;
  attempts: number;
  next_attempt_at: Date;
  last_error: string | null;
  transport_response: string | null;
  created_at: Date;
  sent_at: Date | null;
}

export interface MailDetail extends MailSummary {
  from_address: string | null;
  headers: Record<string, string>;
  text_body: string;
  html_body: string;
  /** The RFC 5322 message as handed to the transport; null until the first attempt. */
  raw: string | null;
}

/** An outbox status as an operator typed it (`mail list`, `logout-deliveries list`). */
export function parseMailStatus(value: string): MailStatus {
  if (!(MAIL_STATUSES as readonly string[]).includes(value)) {
    throw invalid(`status must be one of ${MAIL_STATUSES.join(', ')} (got "${value}")`);
  }
  return value as MailStatus;
}

/** The newest first, at most `limit`. */
export async function listMail(
  db: DbOrTrx,
  options: { status?: MailStatus; limit?: number } = {},
): Promise<MailSummary[]> {
  let query = db
    .selectFrom('mail_outbox')
    .select(SUMMARY_COLUMNS)
    .orderBy('id', 'desc')
    .limit(options.limit ?? 100);
  if (options.status) query = query.where('status', '=', options.status);
  return query.execute();
}

export async function getMail(db: DbOrTrx, id: number): Promise<MailDetail> {
  const row = await db
    .selectFrom('mail_outbox')
    .select([...SUMMARY_COLUMNS, 'from_address', 'headers', 'text_body', 'html_body', 'raw'])
    .where('id', '=', id)
    .executeTakeFirst();
  if (!row) throw notFound(`mail ${id} not found`);
  return row;
}

/**
 * Send a failed (or pending) message again now, with a fresh attempt budget. A sent message is
 * refused (that would be a second delivery), as is one a sender is working on.
 */
/** Sent again by an operator: pending, due now, with a fresh attempt budget (either outbox). */
export const requeued = () =>
  ({ status: 'pending', attempts: 0, next_attempt_at: sql<Date>`now()`, updated_at: sql<Date>`now()` }) as const;

export async function retryMail(db: DbOrTrx, id: number, actor: string): Promise<MailSummary> {
  const current = await getMail(db, id);
  if (current.status === 'sent') throw invalid(`mail ${id} was already sent (${current.sent_at?.toISOString()})`);
  if (current.status === 'sending') throw invalid(`mail ${id} is being sent right now`);
  const row = await db
    .updateTable('mail_outbox')
    .set(requeued())
    .where('id', '=', id)
    .where('status', 'in', ['failed', 'pending'])
    .returning(SUMMARY_COLUMNS)
    .executeTakeFirst();
  if (!row) throw invalid(`mail ${id} changed meanwhile; try again`);
  await recordAudit(db, {
    actor,
    action: 'mail.retry',
    targetType: 'mail',
    targetId: id,
    details: { was: current.status },
  });
  return row;
}

/** Every failed message back to pending, due now; returns how many. */
export async function retryFailedMail(db: DbOrTrx, actor: string): Promise<number> {
  const result = await db.updateTable('mail_outbox').set(requeued()).where('status', '=', 'failed').executeTakeFirst();
  const n = Number(result.numUpdatedRows);
  if (n) await recordAudit(db, { actor, action: 'mail.retry', targetType: 'mail', details: { failed: n } });
  return n;
}

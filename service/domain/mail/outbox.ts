// The mail outbox (table mail_outbox): enqueueMail writes a message in the caller's transaction, so
// a rolled-back change sends nothing and a committed one always has its message. The Message-ID is
// fixed here, once: every attempt, a retry after a crash included, sends the same id, so delivery
// is at-least-once and a duplicate is recognisable by its id (RFC 5322 §3.6.4).
import { randomUUID } from 'node:crypto';
import { type Kysely, sql, type Transaction } from 'kysely';
import type { Database } from '../../db/schema';
import { isSingleMailbox } from '../email-address';
import { invalid } from '../errors';
import { addressNotSuppressed, SUPPRESSED_ERROR } from './suppressions';

export interface OutgoingMail {
  to: string;
  subject: string;
  text: string;
  html: string;
  /** Extra headers; the ones the outbox sets itself (From, To, Message-ID, …) are refused. */
  headers?: Record<string, string>;
  /** What the message is for ("password_reset", "test", …): listed by `mail list`. */
  kind: string;
  /** The From header (buildMessage sets MAIL_FROM); unset, the sender's MAIL_FROM when it sends. */
  from?: string;
  /** Message-ID's right-hand side (buildMessage sets PUBLIC_URL's host). */
  messageIdDomain?: string;
}

/** Used only when the caller gives neither `messageIdDomain` nor `from` (buildMessage gives both). */
const FALLBACK_MESSAGE_ID_DOMAIN = 'lanyard.invalid';

/** Headers the renderer writes from the row's columns, or on every message: never from `headers`. */
const RESERVED_HEADERS = new Set([
  'from',
  'to',
  'cc',
  'bcc',
  'reply-to',
  'sender',
  'subject',
  'date',
  'message-id',
  'mime-version',
  'content-type',
  'content-transfer-encoding',
  'auto-submitted',
  'return-path',
]);
const HEADER_NAME = /^[A-Za-z0-9][A-Za-z0-9-]{0,75}$/;
/** No line breaks or other control characters (header injection), and a sane length. */
const ONE_LINE = /^[^\p{Cc}]*$/u;
const MAX_HEADER_VALUE = 2000;
const MAX_BODY = 1_000_000;
const KIND = /^[a-z][a-z0-9_.-]{0,99}$/;
const DOMAIN = /^(?:[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?\.?)+$|^\[[0-9A-Fa-f:.]+\]$/;

/** The RFC 5322 msg-id for a new message: `<uuid@domain>`. */
function newMessageId(mail: OutgoingMail): string {
  const domain = mail.messageIdDomain ?? (mail.from && /@([^@>\s]+)>?\s*$/.exec(mail.from)?.[1]);
  return `<${randomUUID()}@${domain || FALLBACK_MESSAGE_ID_DOMAIN}>`;
}

/** The outbox's rule for `to`: one mailbox (assertSendable's first check, alone, for bulk inserts). */
export const isSendableAddress = (to: unknown): boolean => typeof to === 'string' && isSingleMailbox(to);

/** Every reason `mail` cannot be sent as given; empty when it can. */
function mailProblems(mail: OutgoingMail): Record<string, string[]> {
  const problems: Record<string, string[]> = {};
  const add = (field: string, message: string) => {
    problems[field] = [...(problems[field] ?? []), message];
  };
  if (!isSendableAddress(mail.to)) add('to', 'must be one e-mail address');
  if (typeof mail.subject !== 'string' || !mail.subject.trim()) add('subject', "can't be blank");
  else if (!ONE_LINE.test(mail.subject) || mail.subject.length > 998) add('subject', 'must be one line of text');
  for (const [field, body] of [
    ['text', mail.text],
    ['html', mail.html],
  ] as const) {
    if (typeof body !== 'string' || !body) add(field, "can't be blank");
    else if (body.length > MAX_BODY) add(field, `is too long (maximum is ${MAX_BODY} characters)`);
  }
  if (typeof mail.kind !== 'string' || !KIND.test(mail.kind)) add('kind', 'must be a lowercase identifier');
  if (mail.from !== undefined && (!ONE_LINE.test(mail.from) || !mail.from.includes('@'))) {
    add('from', 'must be an address');
  }
  if (mail.messageIdDomain !== undefined && !DOMAIN.test(mail.messageIdDomain))
    add('messageIdDomain', 'must be a domain');
  for (const [name, value] of Object.entries(mail.headers ?? {})) {
    if (!HEADER_NAME.test(name)) add('headers', `${JSON.stringify(name)} is not a header name`);
    else if (RESERVED_HEADERS.has(name.toLowerCase())) add('headers', `${name} is set by the outbox`);
    else if (typeof value !== 'string' || !ONE_LINE.test(value) || value.length > MAX_HEADER_VALUE) {
      add('headers', `${name} must be one line of text`);
    }
  }
  return problems;
}

/** Refuse mail that cannot be sent as given, naming the field (the checks of enqueueMail). */
export function assertSendable(mail: OutgoingMail): void {
  const problems = mailProblems(mail);
  if (Object.keys(problems).length) {
    const [field, [message]] = Object.entries(problems)[0];
    throw invalid(`${field} ${message}`, problems);
  }
}

/**
 * Queue one message, in `db`'s transaction when it is one (pass the `trx` of the change that causes
 * the message). Returns the row id and the Message-ID it will carry on every attempt. Invalid mail
 * (an address that is not one mailbox, a header with a line break, …) is refused with the field.
 */
export async function enqueueMail(
  db: Kysely<Database> | Transaction<Database>,
  mail: OutgoingMail,
): Promise<{ id: string; messageId: string }> {
  assertSendable(mail);
  const row = await db
    .insertInto('mail_outbox')
    .values({
      message_id: newMessageId(mail),
      kind: mail.kind,
      to_address: mail.to,
      from_address: mail.from ?? null,
      subject: mail.subject,
      text_body: mail.text,
      html_body: mail.html,
      headers: JSON.stringify(mail.headers ?? {}),
    })
    .returning(['id', 'message_id'])
    .executeTakeFirstOrThrow();
  return { id: String(row.id), messageId: row.message_id };
}

/** A claimed message: what the sender needs to render and send it. */
export interface ClaimedMail {
  id: number;
  message_id: string;
  kind: string;
  to_address: string;
  from_address: string | null;
  subject: string;
  text_body: string;
  html_body: string;
  headers: Record<string, string>;
  raw: string | null;
  attempts: number;
  created_at: Date;
}

/**
 * Claim up to `limit` due messages for `leaseSeconds`: pending ones whose time has come, and ones a
 * sender claimed and never finished (it crashed: its lease lapsed; a claim never moves
 * next_attempt_at, so those were due too). One ordered walk of the index of messages still to do
 * (mail_outbox_queue, migrations 0025 and 0031) that stops at `limit`, however many sent ones the
 * table keeps. The claim changes no indexed column, so its new row version stays on its page (a HOT
 * update, migration 0031). FOR UPDATE SKIP LOCKED: two senders never claim the same row, and
 * neither waits for the other. The claim commits before any
 * send, so `attempts` counts every try, a crashed one included; a lapsed claim that was already the
 * last attempt is marked failed instead of being tried again (a message that kills its sender
 * cannot keep killing it). A message to a suppressed address (suppressions.ts) is marked failed
 * with `last_error` 'suppressed' in the same statement, never handed to a transport: it comes back
 * in `suppressed`, not in `claimed`.
 */
export async function claimDueMail(
  db: Kysely<Database> | Transaction<Database>,
  options: { limit: number; leaseSeconds: number; maxAttempts: number; ids?: readonly number[] },
): Promise<{ claimed: ClaimedMail[]; suppressed: Pick<ClaimedMail, 'id' | 'message_id' | 'kind' | 'attempts'>[] }> {
  const only = options.ids ? sql`and id = any(${[...options.ids]}::bigint[])` : sql``;
  const lastTry = sql`o.status = 'sending' and o.attempts >= ${options.maxAttempts}`;
  const { rows } = await sql<ClaimedMail & { status: string; held: boolean }>`
    with due as (
      select id, not ${addressNotSuppressed(sql.ref('to_address'))} as held from mail_outbox
       where finished_at is null and next_attempt_at <= now()
         and (status = 'pending' or locked_until < now()) ${only}
       order by next_attempt_at, id
       limit ${options.limit}
       for update skip locked
    )
    update mail_outbox o
       set status = case when due.held or ${lastTry} then 'failed' else 'sending' end,
           attempts = case when due.held or ${lastTry} then o.attempts else o.attempts + 1 end,
           last_error = case when due.held then ${SUPPRESSED_ERROR}
                             when ${lastTry} then 'the sender stopped during the last attempt' else o.last_error end,
           locked_until = case when due.held or ${lastTry}
                               then null else now() + make_interval(secs => ${options.leaseSeconds}) end,
           updated_at = now()
      from due
     where o.id = due.id
    returning o.id, o.message_id, o.kind, o.to_address, o.from_address, o.subject, o.text_body, o.html_body,
              o.headers, o.raw, o.attempts, o.created_at, o.status, due.held`.execute(db);
  const byId = (a: { id: number }, b: { id: number }) => a.id - b.id;
  return {
    claimed: rows
      .filter((r) => r.status === 'sending')
      .map(({ status: _, held: __, ...row }) => row)
      .sort(byId),
    suppressed: rows
      .filter((r) => r.held)
      .map((r) => ({ id: r.id, message_id: r.message_id, kind: r.kind, attempts: r.attempts }))
      .sort(byId),
  };
}

/**
 * The transport accepted these messages: one statement for a whole batch (the sender records its
 * accepted messages together, not one round trip each). A message the sender has not recorded yet
 * stays `sending`; should the sender die first, its lease lapses and it is sent again, same bytes.
 */
export async function markMailSent(
  db: Kysely<Database> | Transaction<Database>,
  sent: ReadonlyArray<{ id: number; response: string }>,
): Promise<void> {
  if (!sent.length) return;
  await sql`
    update mail_outbox o
       set status = 'sent', sent_at = now(), updated_at = now(), locked_until = null, last_error = null,
           transport_response = r.response
      from unnest(${sent.map((s) => s.id)}::bigint[], ${sent.map((s) => s.response.slice(0, 1000))}::text[])
           as r(id, response)
     where o.id = r.id and o.status = 'sending'`.execute(db);
}

/**
 * An attempt failed: back to pending after `retryInSeconds`, or `failed` when the error is
 * permanent or this was the last attempt. Returns the status the row is left in.
 */
export async function markMailAttemptFailed(
  db: Kysely<Database> | Transaction<Database>,
  id: number,
  failure: { error: string; permanent: boolean; retryInSeconds: number; maxAttempts: number },
): Promise<'pending' | 'failed' | undefined> {
  const row = await sql<{ status: 'pending' | 'failed' }>`
    update mail_outbox
       set status = case when ${failure.permanent} or attempts >= ${failure.maxAttempts} then 'failed' else 'pending' end,
           next_attempt_at = now() + make_interval(secs => ${failure.retryInSeconds}),
           locked_until = null, updated_at = now(), last_error = ${failure.error.slice(0, 1000)}
     where id = ${id} and status = 'sending'
    returning status`.execute(db);
  return row.rows[0]?.status;
}

/**
 * Seconds before attempt `attempt + 1` (attempt ≥ 1): exponential from `baseSeconds`, capped at
 * `maxSeconds`, with "equal jitter" (half fixed, half random) so that messages failing together
 * (an SMTP server down) do not all come back at the same instant.
 */
export function retryDelaySeconds(
  attempt: number,
  options: { baseSeconds?: number; maxSeconds?: number; random?: () => number } = {},
): number {
  const base = options.baseSeconds ?? 30;
  const cap = options.maxSeconds ?? 3600;
  const ceiling = Math.min(cap, base * 2 ** Math.max(0, attempt - 1));
  return ceiling / 2 + (options.random ?? Math.random)() * (ceiling / 2);
}

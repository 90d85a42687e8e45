// The mail outbox (table mail_outbox): enqueueMail writes a message in the caller's transaction, so
// a rolled-back change sends nothing and a committed one always has its message. The Message-ID is
// fixed here, once: every attempt, a retry after a crash included, sends the same id, so delivery
// is at-least-once and a duplicate is recognisable by its id (RFC 5322 §3.6.4).
import { randomUUID } from 'node:crypto';
import type { Kysely, Transaction } from 'kysely';
import type { Database } from '../../db/schema';
import { isSingleMailbox } from '../email-address';
import { invalid } from '../errors';

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

/** Every reason `mail` cannot be sent as given; empty when it can. */
function mailProblems(mail: OutgoingMail): Record<string, string[]> {
  const problems: Record<string, string[]> = {};
  const add = (field: string, message: string) => {
    problems[field] = [...(problems[field] ?? []), message];
  };
  if (typeof mail.to !== 'string' || !isSingleMailbox(mail.to)) add('to', 'must be one e-mail address');
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

/**
 * Queue one message, in `db`'s transaction when it is one (pass the `trx` of the change that causes
 * the message). Returns the row id and the Message-ID it will carry on every attempt. Invalid mail
 * (an address that is not one mailbox, a header with a line break, …) is refused with the field.
 */
export async function enqueueMail(
  db: Kysely<Database> | Transaction<Database>,
  mail: OutgoingMail,
): Promise<{ id: string; messageId: string }> {
  const problems = mailProblems(mail);
  if (Object.keys(problems).length) {
    const [field, [message]] = Object.entries(problems)[0];
    throw invalid(`${field} ${message}`, problems);
  }
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

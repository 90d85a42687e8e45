// The notification intake (issue 25): an event goes in, the e-mails GitLab meant to send come out.
// One transaction: record the event (its unique index on caller, project or group, and idempotency
// key makes a retry — even one racing the first — wait for it and then find its answer), resolve
// the recipients with the engine (recipients.ts: its rules, never a copy), and queue one outbox
// message per recipient in ONE statement (queueEventMail), whatever the number of recipients.
// `notify events show` reads the event back with each message's delivery state.
import { sql, type Transaction } from 'kysely';
import type { Database, DbOrTrx, MailStatus, NotificationEvent, NotificationTargetType } from '../../db/schema';
import { withTransaction } from '../../db/transaction';
import { DomainError, notFound } from '../errors';
import type { MailSettings } from '../mail/message';
import { assertSendable, isSendableAddress } from '../mail/outbox';
import { addressNotSuppressed } from '../mail/suppressions';
import { getProjectByPath } from '../namespaces';
import { sha256Hex } from '../secrets';
import type { KeyRing } from '../service-keys';
import { getUserByUsername } from '../users';
import type { RecipientReason } from './levels';
import { EVENT_KINDS, type EventMessageContext, type EventScope, eventMessages } from './messages';
import {
  parseRecipientsRequest,
  type Recipient,
  type RecipientsRequest,
  type RecipientTarget,
  resolveRecipients,
} from './recipients';

/** Bad input: a 400 with {"error": message} on the API (as GitLab's Grape), exit 1 in the CLI. */
const badInput = (message: string) => new DomainError('invalid', message, undefined, 'error');

const TARGET_TYPES: readonly NotificationTargetType[] = ['issue', 'merge_request', 'pipeline', 'release', 'project'];
const MAX_TITLE = 255;
const MAX_URL = 2000;
const MAX_SUMMARY = 10_000;
const MAX_KEY = 255;
const ONE_LINE = /^[^\p{Cc}]*$/u;

export interface NotificationEventInput {
  request: RecipientsRequest;
  target: { type: NotificationTargetType; ref: number; title: string; url: string };
  summary: string | null;
  idempotencyKey: string;
}

const present = (v: unknown) => v !== undefined && v !== null && v !== '';

function text(name: string, value: unknown, max: number, oneLine: boolean): string {
  if (!present(value)) throw badInput(`${name} is missing`);
  if (typeof value !== 'string' || (oneLine && !ONE_LINE.test(value)) || !value.trim()) {
    throw badInput(`${name} is invalid`);
  }
  if (value.length > max) throw badInput(`${name} is too long (maximum is ${max} characters)`);
  return value;
}

function refOf(name: string, value: unknown): number {
  if (!present(value)) throw badInput(`${name} is missing`);
  const n =
    typeof value === 'number' ? value : typeof value === 'string' && /^\d{1,15}$/.test(value) ? Number(value) : NaN;
  if (!Number.isSafeInteger(n) || n <= 0) throw badInput(`${name} is invalid`);
  return n;
}

/**
 * Parse an event as the API takes it (the body): `event`, `target` {type, iid | id, title,
 * url}, `author_id`, `participant_ids`, `mentioned_ids`, `summary`, `idempotency_key`. Shape checks
 * only, nothing read: the users are checked by the engine, inside the intake's transaction.
 */
export function parseNotificationEvent(
  body: Record<string, unknown>,
  scope: 'project' | 'group',
): NotificationEventInput {
  const request = parseRecipientsRequest(body);
  const kind = EVENT_KINDS[request.event];
  if (scope === 'group' && !kind.onGroup) throw badInput(`event ${request.event} does not exist on groups`);

  const target = body.target;
  if (!present(target)) throw badInput('target is missing');
  if (typeof target !== 'object' || Array.isArray(target)) throw badInput('target is invalid');
  const t = target as Record<string, unknown>;
  if (!present(t.type)) throw badInput('target[type] is missing');
  if (!TARGET_TYPES.includes(t.type as NotificationTargetType))
    throw badInput('target[type] does not have a valid value');
  const type = t.type as NotificationTargetType;
  if (!kind.targets.includes(type)) {
    throw badInput(
      `target[type] ${type} does not fit the event ${request.event} (expected ${kind.targets.join(' or ')})`,
    );
  }
  // Issues and merge requests are named by their iid in the project, as in GitLab's URLs.
  const refName = type === 'issue' || type === 'merge_request' ? 'iid' : 'id';
  const ref = refOf(`target[${refName}]`, t[refName]);
  const title = text('target[title]', t.title, MAX_TITLE, true);
  const url = text('target[url]', t.url, MAX_URL, true);
  if (!/^https?:\/\/[^\s/]+/i.test(url) || !URL.canParse(url))
    throw badInput('target[url] must be an http or https URL');

  const summary = present(body.summary) ? text('summary', body.summary, MAX_SUMMARY, false) : null;
  const idempotencyKey = text('idempotency_key', body.idempotency_key, MAX_KEY, true);
  return { request, target: { type, ref, title, url }, summary, idempotencyKey };
}

/** The admin CLI's form of an event (`notify send`): a project path and usernames, checked as the API checks ids. */
export async function eventFromNames(
  db: DbOrTrx,
  input: {
    project: string;
    event: string;
    target: { type: string; id: string; title: string; url: string };
    author?: string;
    participants?: string[];
    mentioned?: string[];
    summary?: string;
    idempotencyKey: string;
  },
): Promise<{ target: EventTarget; input: NotificationEventInput }> {
  const project = await getProjectByPath(db, input.project);
  const idOf = async (username: string) => (await getUserByUsername(db, username)).id;
  const refName = input.target.type === 'issue' || input.target.type === 'merge_request' ? 'iid' : 'id';
  const body = {
    event: input.event,
    target: { type: input.target.type, [refName]: input.target.id, title: input.target.title, url: input.target.url },
    author_id: input.author ? await idOf(input.author) : undefined,
    participant_ids: await Promise.all((input.participants ?? []).map(idOf)),
    mentioned_ids: await Promise.all((input.mentioned ?? []).map(idOf)),
    summary: input.summary,
    idempotency_key: input.idempotencyKey,
  };
  return { target: { kind: 'project', project }, input: parseNotificationEvent(body, 'project') };
}

/** What the intake answers (the same for a retry with the same key). */
export interface NotificationEventReceipt {
  id: number;
  event: NotificationEvent;
  project_id: number | null;
  group_id: number | null;
  target_type: NotificationTargetType;
  recipient_count: number;
  idempotency_key: string;
  created_at: Date;
}

const RECEIPT_COLUMNS = sql`id, event, project_id, group_id, target_type, recipient_count, idempotency_key, created_at`;

/** The request as parsed, in a canonical form: a retry must ask for exactly the same event. */
const digestOf = (input: NotificationEventInput) =>
  sha256Hex(
    JSON.stringify([
      input.request.event,
      input.request.authorId,
      input.request.participantIds,
      input.request.mentionedIds,
      input.target,
      input.summary,
    ]),
  );

const scopeOf = (target: EventTarget): EventScope =>
  target.kind === 'project'
    ? {
        type: 'project',
        id: target.project.id,
        name: target.project.name,
        fullPath: target.project.path_with_namespace,
      }
    : { type: 'group', id: target.group.id, name: target.group.name, fullPath: target.group.full_path };

/** A project or group for the intake: the engine's target plus the name the messages show. */
export type EventTarget =
  | { kind: 'project'; project: Extract<RecipientTarget, { kind: 'project' }>['project'] & { name: string } }
  | { kind: 'group'; group: Extract<RecipientTarget, { kind: 'group' }>['group'] & { name: string } };

type ReceiptRow = Omit<NotificationEventReceipt, 'id' | 'project_id' | 'group_id'> & {
  id: string | number;
  project_id: string | number | null;
  group_id: string | number | null;
};

const receiptOf = (r: ReceiptRow): NotificationEventReceipt => ({
  ...r,
  id: Number(r.id),
  project_id: r.project_id === null ? null : Number(r.project_id),
  group_id: r.group_id === null ? null : Number(r.group_id),
  recipient_count: Number(r.recipient_count),
});

/**
 * Take an event in: record it, resolve its recipients and queue their e-mails, atomically. `caller`
 * names who posted it ('application:7', 'user:1'): idempotency keys are per caller and project or
 * group. The same key again returns the first answer and queues nothing; with a different event it
 * is refused (409).
 */
export async function takeNotificationEvent(
  db: DbOrTrx,
  mail: MailSettings,
  ring: KeyRing,
  caller: string,
  target: EventTarget,
  input: NotificationEventInput,
): Promise<NotificationEventReceipt> {
  const digest = digestOf(input);
  const projectId = target.kind === 'project' ? target.project.id : null;
  const groupId = target.kind === 'group' ? target.group.id : null;
  return withTransaction(db, async (trx) => {
    // The unique index decides: a concurrent insert with the same key waits for this transaction,
    // then does nothing and finds the committed row below.
    const { rows: inserted } = await sql<ReceiptRow & { author_name: string | null }>`
      insert into notification_events
        (caller, project_id, group_id, event, target_type, target_ref, target_title, target_url, author_id,
         summary, idempotency_key, request_digest)
      values (${caller}, ${projectId}::bigint, ${groupId}::bigint, ${input.request.event}, ${input.target.type},
              ${input.target.ref}, ${input.target.title}, ${input.target.url}, ${input.request.authorId}::bigint,
              ${input.summary}, ${input.idempotencyKey}, ${digest})
      on conflict (caller, coalesce(project_id, 0), coalesce(group_id, 0), idempotency_key) do nothing
      returning ${RECEIPT_COLUMNS}, (select name from users where id = author_id) as author_name`.execute(trx);
    if (!inserted.length) return earlierAnswer(trx, caller, projectId, groupId, input.idempotencyKey, digest);

    const { author_name: authorName, ...row } = inserted[0];
    const receipt = receiptOf(row);
    const recipients = await resolveRecipients(trx, target, input.request);
    const ctx: EventMessageContext = {
      eventId: receipt.id,
      event: input.request.event,
      scope: scopeOf(target),
      target: input.target,
      authorName,
      summary: input.summary,
    };
    const queued = await queueEventMail(trx, mail, ring, ctx, recipients);
    return { ...receipt, recipient_count: queued };
  });
}

async function earlierAnswer(
  trx: Transaction<Database>,
  caller: string,
  projectId: number | null,
  groupId: number | null,
  key: string,
  digest: string,
): Promise<NotificationEventReceipt> {
  const { rows } = await sql<ReceiptRow & { request_digest: string }>`
    select ${RECEIPT_COLUMNS}, request_digest from notification_events
     where caller = ${caller} and coalesce(project_id, 0) = coalesce(${projectId}::bigint, 0)
       and coalesce(group_id, 0) = coalesce(${groupId}::bigint, 0) and idempotency_key = ${key}`.execute(trx);
  const { request_digest, ...row } = rows[0];
  if (request_digest !== digest) {
    throw new DomainError('conflict', 'idempotency_key was already used for a different event');
  }
  return receiptOf(row);
}

/**
 * Queue the event's e-mails and link each recipient to theirs, in ONE statement whatever their
 * number: the per-recipient values travel as arrays, the bodies once per reason (`bodies`, indexed
 * by `r.body`). Every resolved recipient is linked (with a null mail_id when no message was queued
 * for them); the event's recipient_count is the number of messages queued. The `where` of the
 * outbox insert is where a filter on the addresses belongs (e.g. suppressed ones).
 */
async function queueEventMail(
  trx: Transaction<Database>,
  mail: MailSettings,
  ring: KeyRing,
  ctx: EventMessageContext,
  recipients: readonly Recipient[],
): Promise<number> {
  const messages = eventMessages(mail, ctx, ring);
  const kind = `notification.${ctx.event}`;
  const reasons: RecipientReason[] = [];
  const checked = new Set<RecipientReason>();
  const rows = recipients.map((r) => {
    if (!reasons.includes(r.reason)) reasons.push(r.reason);
    const row = {
      userId: r.user_id,
      reason: r.reason,
      body: reasons.indexOf(r.reason) + 1,
      messageId: messages.messageId(r),
      to: r.email,
      headers: messages.headersJson(r),
    };
    // The outbox's own rules (one mailbox, one-line headers, none it sets itself), as enqueueMail's:
    // in full for the first recipient of each reason, as every recipient with that reason shares the
    // subject, the body and the headers but the unsubscribe link (our own URL and token); then only
    // the address, which is each recipient's own.
    if (!checked.has(r.reason) || !isSendableAddress(r.email)) {
      checked.add(r.reason);
      const sample = {
        ...messages.body(r.reason),
        to: r.email,
        headers: messages.headers(r),
        subject: messages.subject,
      };
      assertSendable({ ...sample, kind, from: messages.from });
    }
    return row;
  });
  const bodies = reasons.map((reason) => messages.body(reason));
  const { rows: updated } = await sql<{ recipient_count: number }>`
    with r as materialized (
      select * from unnest(
        ${rows.map((x) => x.userId)}::bigint[], ${rows.map((x) => x.reason)}::text[], ${rows.map((x) => x.body)}::int[],
        ${rows.map((x) => x.messageId)}::text[], ${rows.map((x) => x.to)}::text[],
        ${rows.map((x) => x.headers)}::text[]
      ) as r(user_id, reason, body, message_id, to_address, headers)
    ),
    queued as (
      insert into mail_outbox (message_id, kind, to_address, from_address, subject, text_body, html_body, headers)
      select r.message_id, ${kind}, r.to_address, ${messages.from}, ${messages.subject},
             (${bodies.map((b) => b.text)}::text[])[r.body], (${bodies.map((b) => b.html)}::text[])[r.body], r.headers::jsonb
        from r
       where ${addressNotSuppressed(sql.ref('r.to_address'))}
      returning id, message_id
    ),
    linked as (
      insert into notification_event_recipients (event_id, user_id, reason, mail_id)
      select ${ctx.eventId}::bigint, r.user_id, r.reason, q.id from r left join queued q on q.message_id = r.message_id
      returning mail_id
    )
    update notification_events set recipient_count = (select count(mail_id) from linked)
     where id = ${ctx.eventId}::bigint
    returning recipient_count`.execute(trx);
  return Number(updated[0].recipient_count);
}

/** One recipient of a recorded event, with the state of their message. */
export interface EventDelivery {
  user_id: number;
  username: string;
  reason: RecipientReason;
  mail_id: number | null;
  to_address: string | null;
  message_id: string | null;
  /** The outbox status; null when no message was queued or it was purged. */
  status: MailStatus | null;
  attempts: number | null;
  sent_at: Date | null;
  last_error: string | null;
}

export interface NotificationEventDetail extends NotificationEventReceipt {
  caller: string;
  scope_path: string;
  target_ref: number;
  target_title: string;
  target_url: string;
  author_id: number | null;
  deliveries: EventDelivery[];
}

/** An event and who it e-mailed, why, and how each message fared (`notify events show`). */
export async function getNotificationEvent(db: DbOrTrx, id: number): Promise<NotificationEventDetail> {
  const { rows } = await sql<
    ReceiptRow &
      Pick<NotificationEventDetail, 'caller' | 'scope_path' | 'target_title' | 'target_url'> & {
        target_ref: string | number;
        author_id: string | number | null;
      }
  >`
    select ${RECEIPT_COLUMNS}, caller, target_ref, target_title, target_url, author_id,
           coalesce((select path_with_namespace from projects where id = e.project_id),
                    (select full_path from groups where id = e.group_id)) as scope_path
      from notification_events e where id = ${id}::bigint`.execute(db);
  if (!rows.length) throw notFound(`Notification event ${id} Not Found`);
  const { target_ref, author_id, caller, scope_path, target_title, target_url, ...row } = rows[0];
  const { rows: deliveries } = await sql<EventDelivery>`
    select l.user_id, u.username, l.reason, l.mail_id, m.to_address, m.message_id, m.status, m.attempts,
           m.sent_at, m.last_error
      from notification_event_recipients l
      join users u on u.id = l.user_id
      left join mail_outbox m on m.id = l.mail_id
     where l.event_id = ${id}::bigint
     order by u.username`.execute(db);
  return {
    ...receiptOf(row),
    caller,
    scope_path,
    target_ref: Number(target_ref),
    target_title,
    target_url,
    author_id: author_id === null ? null : Number(author_id),
    deliveries: deliveries.map((d) => ({
      ...d,
      user_id: Number(d.user_id),
      mail_id: d.mail_id === null ? null : Number(d.mail_id),
    })),
  };
}

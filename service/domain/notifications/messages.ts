// The notification e-mails an event causes (issue 25), in GitLab's conventions
// (app/mailers/notify.rb, app/mailers/emails/*.rb, app/helpers/emails_helper.rb):
// - the subject names the project (or group) and the target: "API | Crash on login (#12)",
//   "Re: " once the thread exists (GitLab's mail_answer_thread);
// - X-GitLab-Project, X-GitLab-Project-Id, X-GitLab-Project-Path and List-Id
//   ("full/path <id.path-reversed.host>", EmailsHelper#create_list_id_string) per project;
// - X-GitLab-NotificationReason: the engine's reason for this recipient;
// - a Message-ID fixed per event and recipient, and In-Reply-To/References to one id per target
//   (GitLab's "<issue_42@host>"), so every e-mail about one issue, merge request or pipeline threads;
// - a footer saying why the person gets it, and a link to their notification settings.
// The text and HTML parts come from buildMessage (domain/mail/message.ts).
import type { KeyRing } from '../service-keys';
import { unsubscribeHeaders } from './unsubscribe';
import type { NotificationEvent, NotificationTargetType } from '../../db/schema';
import { buildMessage, type MailSettings } from '../mail/message';
import type { RecipientReason } from './levels';

/** What each event is about, where it may be posted, and how it reads. */
interface EventKind {
  targets: readonly NotificationTargetType[];
  /** Also exists on groups (group-level issues, GitLab 18's work items). */
  onGroup: boolean;
  /** The event opens the thread (its e-mail is no "Re:"). */
  opens: boolean;
  /** The first line of the body: `actor` did it to `ref` ("issue #12"). */
  line(actor: string, ref: string): string;
}

const ISSUE = ['issue'] as const;
const MR = ['merge_request'] as const;
const PIPELINE = ['pipeline'] as const;

export const EVENT_KINDS: Readonly<Record<NotificationEvent, EventKind>> = {
  new_note: {
    targets: ['issue', 'merge_request'],
    onGroup: true,
    opens: false,
    line: (a, r) => `${a} commented on ${r}.`,
  },
  new_issue: { targets: ISSUE, onGroup: true, opens: true, line: (a, r) => `${a} opened ${r}.` },
  reopen_issue: { targets: ISSUE, onGroup: true, opens: false, line: (a, r) => `${a} reopened ${r}.` },
  close_issue: { targets: ISSUE, onGroup: true, opens: false, line: (a, r) => `${a} closed ${r}.` },
  reassign_issue: {
    targets: ISSUE,
    onGroup: true,
    opens: false,
    line: (a, r) => `${a} changed the assignees of ${r}.`,
  },
  issue_due: { targets: ISSUE, onGroup: true, opens: false, line: (_a, r) => `${capital(r)} is due.` },
  new_merge_request: { targets: MR, onGroup: false, opens: true, line: (a, r) => `${a} opened ${r}.` },
  reopen_merge_request: { targets: MR, onGroup: false, opens: false, line: (a, r) => `${a} reopened ${r}.` },
  close_merge_request: { targets: MR, onGroup: false, opens: false, line: (a, r) => `${a} closed ${r}.` },
  reassign_merge_request: {
    targets: MR,
    onGroup: false,
    opens: false,
    line: (a, r) => `${a} changed the assignees of ${r}.`,
  },
  merge_merge_request: { targets: MR, onGroup: false, opens: false, line: (a, r) => `${a} merged ${r}.` },
  push_to_merge_request: {
    targets: MR,
    onGroup: false,
    opens: false,
    line: (a, r) => `${a} pushed new commits to ${r}.`,
  },
  change_reviewer_merge_request: {
    targets: MR,
    onGroup: false,
    opens: false,
    line: (a, r) => `${a} changed the reviewers of ${r}.`,
  },
  merge_when_pipeline_succeeds: {
    targets: MR,
    onGroup: false,
    opens: false,
    line: (a, r) => `${a} set ${r} to merge when the pipeline succeeds.`,
  },
  failed_pipeline: { targets: PIPELINE, onGroup: false, opens: false, line: (_a, r) => `${capital(r)} has failed.` },
  success_pipeline: {
    targets: PIPELINE,
    onGroup: false,
    opens: false,
    line: (_a, r) => `${capital(r)} has succeeded.`,
  },
  fixed_pipeline: { targets: PIPELINE, onGroup: false, opens: false, line: (_a, r) => `${capital(r)} has been fixed.` },
  new_release: { targets: ['release'], onGroup: false, opens: true, line: (a, r) => `${a} published ${r}.` },
  moved_project: { targets: ['project'], onGroup: false, opens: true, line: (_a, r) => `${capital(r)} was moved.` },
};

const capital = (s: string) => s.charAt(0).toUpperCase() + s.slice(1);

/** Where the event happened: a project, or a group for the events that exist on groups. */
export interface EventScope {
  type: 'project' | 'group';
  id: number;
  name: string;
  fullPath: string;
}

/** One event, as every one of its e-mails needs it. */
export interface EventMessageContext {
  eventId: number;
  event: NotificationEvent;
  scope: EventScope;
  target: { type: NotificationTargetType; ref: number; title: string; url: string };
  /** The author's name, or null (a system event, or the author is gone). */
  authorName: string | null;
  summary: string | null;
}

/** One recipient, as the engine resolved them. */
export interface MessageRecipient {
  user_id: number;
  email: string;
  reason: RecipientReason;
}

/** The path of the page where a person changes who e-mails them (contract §3). */
export const NOTIFICATION_SETTINGS_PATH = '/-/profile/notifications';

/** "issue #12", "merge request !3", "pipeline #7", "release v1.0", "project acme/api". */
function targetRef(ctx: EventMessageContext): string {
  const { type, ref, title } = ctx.target;
  switch (type) {
    case 'issue':
      return `issue #${ref}`;
    case 'merge_request':
      return `merge request !${ref}`;
    case 'pipeline':
      return `pipeline #${ref}`;
    case 'release':
      return `release ${title}`;
    case 'project':
      return `project ${ctx.scope.fullPath}`;
  }
}

/** The subject, GitLab's `subject(…)`: "<project name> | <what>", "Re: " after the thread's first. */
function notificationSubject(ctx: EventMessageContext): string {
  const { type, ref, title } = ctx.target;
  const what = {
    issue: `${title} (#${ref})`,
    merge_request: `${title} (!${ref})`,
    pipeline:
      `${{ failed_pipeline: 'Failed', success_pipeline: 'Successful', fixed_pipeline: 'Fixed' }[ctx.event as 'failed_pipeline'] ?? ''} pipeline #${ref}: ${title}`.trim(),
    release: `New release: ${title}`,
    project: 'Project was moved',
  }[type];
  return `${EVENT_KINDS[ctx.event].opens ? '' : 'Re: '}${ctx.scope.name} | ${what}`;
}

/** The host messages name (PUBLIC_URL's), as GitLab's Gitlab.config.gitlab.host. */
const hostOf = (settings: MailSettings) => new URL(settings.publicUrl).hostname;

/** GitLab's List-Id: "<full/path> <id.path.reversed.host>", the id part at most 255 characters. */
function listId(scope: EventScope, host: string): string {
  const reversed = scope.fullPath
    .toLowerCase()
    .split('/')
    .reverse()
    .join('/')
    .replace(/[^a-z0-9/]/g, '-')
    .replace(/\/+/g, '.')
    .replace(/^\.+|\.+$/g, '');
  const room = 255 - host.length - String(scope.id).length - 2;
  const path = reversed.length > room ? reversed.slice(0, Math.max(room, 0)).replace(/\.+$/, '') : reversed;
  const id = room < 3 ? `${scope.id}...${host}` : `${scope.id}.${path}.${host}`;
  return `${scope.fullPath} <${id}>`;
}

/** The one Message-ID every e-mail about the target refers to: "<project-12-issue-4@host>". */
function threadId(ctx: EventMessageContext, host: string): string {
  const { type, ref } = ctx.target;
  const at = `${ctx.scope.type}-${ctx.scope.id}`;
  return type === 'project' ? `<${at}@${host}>` : `<${at}-${type.replace('_', '-')}-${ref}@${host}>`;
}

/** This recipient's e-mail of this event: the same id on every attempt and every retry of the intake. */
const recipientMessageId = (ctx: EventMessageContext, userId: number, host: string) =>
  `<notification-${ctx.eventId}-${userId}@${host}>`;

/** The headers every e-mail of the event carries (project, list, thread). */
function eventHeaders(ctx: EventMessageContext, host: string): Record<string, string> {
  const thread = threadId(ctx, host);
  return {
    ...(ctx.scope.type === 'project'
      ? {
          'X-GitLab-Project': ctx.scope.name,
          'X-GitLab-Project-Id': String(ctx.scope.id),
          'X-GitLab-Project-Path': ctx.scope.fullPath,
        }
      : { 'X-GitLab-Group': ctx.scope.name, 'X-GitLab-Group-Id': String(ctx.scope.id) }),
    'List-Id': listId(ctx.scope, host),
    'X-Lanyard-Event': ctx.event,
    'In-Reply-To': thread,
    References: thread,
  };
}

/**
 * The headers of one recipient's e-mail, given the event's (eventHeaders): the one place where
 * per-recipient headers are built. A project's e-mails carry RFC 8058's one-click unsubscribe,
 * signed for this person and this project (unsubscribe.ts); a group has no such level to set.
 */
function notificationHeaders(
  common: Record<string, string>,
  recipient: MessageRecipient,
  unsubscribe: ((userId: number) => Record<string, string>) | undefined,
): Record<string, string> {
  return { ...common, 'X-GitLab-NotificationReason': recipient.reason, ...unsubscribe?.(recipient.user_id) };
}

/** The footer's sentence (EmailsHelper#notification_reason_text, with the engine's reasons). */
function reasonSentence(reason: RecipientReason, ctx: EventMessageContext, host: string): string {
  const where = `${ctx.scope.type} ${ctx.scope.fullPath}`;
  switch (reason) {
    case 'mentioned':
      return `You're receiving this email because you have been mentioned on ${host}.`;
    case 'participating':
      return `You're receiving this email because you are participating in this ${ctx.target.type.replace('_', ' ')} on ${host}.`;
    case 'watching':
      return `You're receiving this email because you are watching ${where} on ${host}.`;
    case 'custom':
      return `You're receiving this email because your custom notification settings for ${where} include this event on ${host}.`;
  }
}

/** The paragraphs every recipient of the event reads (before their own footer). */
function eventParagraphs(ctx: EventMessageContext): string[] {
  const ref = targetRef(ctx);
  const summary = (ctx.summary ?? '')
    .split(/\r?\n\s*\r?\n/)
    .map((p) => p.trim())
    .filter(Boolean);
  return [EVENT_KINDS[ctx.event].line(ctx.authorName ?? 'Someone', ref), ...summary, `View ${ref}: ${ctx.target.url}`];
}

/** One composed body (text and HTML) of an event: the same for every recipient with that reason. */
export interface EventBody {
  text: string;
  html: string;
}

/**
 * The e-mails of one event. The body depends only on the recipient's reason (its footer), so it is
 * composed once per reason, not once per recipient (10,000 recipients, at most four bodies); what
 * differs per recipient is the address, the Message-ID and the headers (notificationHeaders).
 */
export function eventMessages(settings: MailSettings, ctx: EventMessageContext, ring: KeyRing) {
  const host = hostOf(settings);
  const scope = ctx.scope;
  const unsubscribe =
    scope.type === 'project' ? (userId: number) => unsubscribeHeaders(settings, ring, userId, scope.id) : undefined;
  const subject = notificationSubject(ctx);
  const paragraphs = eventParagraphs(ctx);
  const common = eventHeaders(ctx, host);
  const bodies = new Map<RecipientReason, EventBody>();
  // headersJson's shared part per reason: the JSON of notificationHeaders without the recipient's own
  // headers, written once, not once per recipient.
  const shared = new Map<RecipientReason, string>();
  return {
    subject,
    from: settings.from,
    messageIdDomain: host,
    body(reason: RecipientReason): EventBody {
      let body = bodies.get(reason);
      if (!body) {
        const { text, html } = buildMessage(settings, {
          name: '',
          subject,
          paragraphs: [...paragraphs, reasonSentence(reason, ctx, host)],
          action: { label: 'Manage your notification settings', path: NOTIFICATION_SETTINGS_PATH },
        });
        body = { text, html };
        bodies.set(reason, body);
      }
      return body;
    },
    headers: (recipient: MessageRecipient) => notificationHeaders(common, recipient, unsubscribe),
    /**
     * JSON.stringify(headers(recipient)), the same text, composed from the part every recipient
     * with this reason shares (stringified once) and the recipient's own unsubscribe headers.
     */
    headersJson(recipient: MessageRecipient): string {
      let head = shared.get(recipient.reason);
      if (head === undefined) {
        head = JSON.stringify(notificationHeaders(common, recipient, undefined)).slice(0, -1);
        shared.set(recipient.reason, head);
      }
      const own = unsubscribe?.(recipient.user_id);
      return own ? `${head},${JSON.stringify(own).slice(1)}` : `${head}}`;
    },
    messageId: (recipient: MessageRecipient) => recipientMessageId(ctx, recipient.user_id, host),
  };
}

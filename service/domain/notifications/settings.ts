// Notification settings (contract §4): the global setting of a user (level + notification e-mail)
// and one per group or project (level), each with the 19 e-mail event flags (GitLab 17/18) used by level
// `custom`. All validation lives here, shared by the API and the admin CLI. An update is
// validated completely before anything is written, then written as one upsert statement, so a
// rejected update changes nothing and concurrent updates never interleave.
import type { DbOrTrx, NotificationLevel, NotificationSettingsTable, User } from '../../db/schema';
import { NOTIFICATION_EVENTS, type NotificationEvent } from '../../db/schema';
import { type Selectable, sql } from 'kysely';
import { withTransaction } from '../../db/transaction';
import { type AuditActor, auditInsertFrom, recordAudit } from '../audit';
import { parseBoolean } from '../booleans';
import { DomainError, invalid } from '../errors';
import { verifiedEmails } from '../users';
import { statementTemplates } from '../../db/statement-templates';
import { namespaceTarget, visibleNamespaceIdsSql } from '../visibility';
import { addressOf } from './address';
import { DEFAULT_LEVEL, INHERIT, NOTIFICATION_LEVELS } from './levels';

export { NOTIFICATION_EVENTS, NOTIFICATION_LEVELS };

/** Where a setting applies: the user's global setting, or one group's or project's. */
export type NotificationSource = { kind: 'global' } | { kind: 'group'; id: number } | { kind: 'project'; id: number };

/** GitLab's defaults: participating globally; a group or project follows the global setting. */
const defaultLevel = (source: NotificationSource): NotificationLevel =>
  source.kind === 'global' ? DEFAULT_LEVEL : INHERIT;

type NotificationEvents = Record<NotificationEvent, boolean>;

/** The wire shape (GitLab's NotificationSetting / GlobalNotificationSetting entities). */
interface NotificationSettingsView {
  level: NotificationLevel;
  /** Only with level `custom`: every flag, as a boolean. */
  events?: NotificationEvents;
  /** The global setting always; a group's when it names one (inherited by its subgroups and projects). */
  notification_email?: string;
}

/** A validated update; only the fields present change. */
export interface NotificationSettingsUpdate {
  level?: NotificationLevel;
  /** Global and group only. null resets (global: to the primary e-mail; group: to inheriting). */
  notificationEmail?: string | null;
  events: Partial<NotificationEvents>;
}

/** A parameter that cannot be coerced to its type (GitLab answers `{"error":"<param> is invalid"}`). */
class InvalidParameterError extends DomainError {
  constructor(readonly parameter: string) {
    super('invalid', `${parameter} is invalid`, undefined, 'error');
    this.name = 'InvalidParameterError';
  }
}

const NOTIFICATION_EMAIL_NOT_VERIFIED = { notification_email: ['must be an email you have verified'] };

const isLevel = (v: unknown): v is NotificationLevel =>
  typeof v === 'string' && (NOTIFICATION_LEVELS as string[]).includes(v);

/** Rails' enum message for an unknown level, byte-for-byte: `'x' is not a valid level`. */
function parseNotificationLevel(value: unknown): NotificationLevel {
  if (isLevel(value)) return value;
  throw invalid(`'${typeof value === 'string' ? value : JSON.stringify(value)}' is not a valid level`);
}

/**
 * Parse request parameters (query, form or JSON, already merged) into an update. Checks in
 * GitLab's order: parameter types first (flags, e-mail), then the level. Unknown parameters are
 * ignored; `notification_email` only counts for the global and group settings.
 */
export function parseNotificationSettingsUpdate(
  params: Record<string, unknown>,
  source: NotificationSource,
): NotificationSettingsUpdate {
  const events: Partial<NotificationEvents> = {};
  for (const event of NOTIFICATION_EVENTS) {
    if (params[event] === undefined) continue;
    const value = parseBoolean(params[event]);
    if (value === undefined) throw new InvalidParameterError(event);
    events[event] = value;
  }
  const update: NotificationSettingsUpdate = { events };
  if (source.kind !== 'project' && params.notification_email !== undefined && params.notification_email !== null) {
    if (typeof params.notification_email !== 'string') throw new InvalidParameterError('notification_email');
    const email = params.notification_email.trim();
    update.notificationEmail = email === '' ? null : email;
  }
  if (params.level !== undefined) update.level = parseNotificationLevel(params.level);
  return update;
}

/**
 * The notification e-mail must be the primary or a verified secondary e-mail of the user.
 * Returns the address as the user registered it (matched case-insensitively).
 */
async function requireVerifiedNotificationEmail(
  db: DbOrTrx,
  user: Pick<User, 'id' | 'email'>,
  email: string,
): Promise<string> {
  const match = (await verifiedEmails(db, user)).find((e) => e.toLowerCase() === email.toLowerCase());
  if (!match) throw invalid('notification_email must be an email you have verified', NOTIFICATION_EMAIL_NOT_VERIFIED);
  return match;
}

type SettingsRow = Selectable<NotificationSettingsTable>;

function toView(
  row: Pick<SettingsRow, 'level' | 'notification_email' | NotificationEvent> | undefined,
  source: NotificationSource,
  user: Pick<User, 'email'>,
): NotificationSettingsView {
  const view: NotificationSettingsView = { level: row?.level ?? defaultLevel(source) };
  if (view.level === 'custom') {
    view.events = Object.fromEntries(NOTIFICATION_EVENTS.map((e) => [e, row?.[e] ?? false])) as NotificationEvents;
  }
  if (source.kind === 'global')
    view.notification_email = addressOf({ group: null, global: row?.notification_email, primary: user.email });
  else if (source.kind === 'group' && row?.notification_email) view.notification_email = row.notification_email;
  return view;
}

const SETTINGS_COLUMNS = ['level', 'notification_email', ...NOTIFICATION_EVENTS] as const;

/**
 * The global settings view from a row already read (as JSON, with the API token: see
 * access-tokens.ts's withGlobalNotificationSettings); null when the user never set one.
 */
export function globalNotificationSettingsView(
  row: Record<string, unknown> | null,
  user: Pick<User, 'email'>,
): NotificationSettingsView {
  return toView(
    (row ?? undefined) as Pick<SettingsRow, 'level' | 'notification_email' | NotificationEvent>,
    { kind: 'global' },
    user,
  );
}

export async function getNotificationSettings(
  db: DbOrTrx,
  user: Pick<User, 'id' | 'email'>,
  source: NotificationSource,
): Promise<NotificationSettingsView> {
  let q = db.selectFrom('notification_settings').select(SETTINGS_COLUMNS).where('user_id', '=', user.id);
  if (source.kind === 'global') q = q.where('group_id', 'is', null).where('project_id', 'is', null);
  else if (source.kind === 'group') q = q.where('group_id', '=', source.id);
  else q = q.where('project_id', '=', source.id);
  return toView(await q.executeTakeFirst(), source, user);
}

/** The columns an update writes (both upserts set exactly these on conflict): only the fields present. */
function changeSet(update: NotificationSettingsUpdate, notificationEmail: string | null | undefined) {
  return {
    ...(update.level !== undefined ? { level: update.level } : {}),
    ...(notificationEmail !== undefined ? { notification_email: notificationEmail } : {}),
    ...update.events,
  };
}

/**
 * Apply a validated update: the e-mail is checked first, then one INSERT … ON CONFLICT on the
 * partial unique index of the source writes every change at once (atomic under concurrency:
 * PostgreSQL serialises the conflicting upserts on the index entry).
 */
export async function updateNotificationSettings(
  db: DbOrTrx,
  user: Pick<User, 'id' | 'email' | 'username'>,
  source: NotificationSource,
  update: NotificationSettingsUpdate,
  /** Who changed it (default: the user themselves); every path records the same audit event. */
  audit: AuditActor = { actor: `user:${user.username}` },
): Promise<NotificationSettingsView> {
  return withTransaction(db, (trx) => writeNotificationSettings(trx, user, source, update, audit));
}

async function writeNotificationSettings(
  db: DbOrTrx,
  user: Pick<User, 'id' | 'email'>,
  source: NotificationSource,
  update: NotificationSettingsUpdate,
  audit: AuditActor,
): Promise<NotificationSettingsView> {
  let notificationEmail = update.notificationEmail;
  if (source.kind === 'project' && notificationEmail !== undefined)
    throw invalid('notification_email applies to the global and group settings only');
  if (notificationEmail) notificationEmail = await requireVerifiedNotificationEmail(db, user, notificationEmail);

  const changes = changeSet(update, notificationEmail);
  const now = new Date();
  const row = await db
    .insertInto('notification_settings')
    .values({
      user_id: user.id,
      group_id: source.kind === 'group' ? source.id : null,
      project_id: source.kind === 'project' ? source.id : null,
      level: defaultLevel(source),
      ...changes,
      updated_at: now,
    })
    .onConflict((oc) => {
      const target =
        source.kind === 'global'
          ? oc.column('user_id').where('group_id', 'is', null).where('project_id', 'is', null)
          : source.kind === 'group'
            ? oc.columns(['user_id', 'group_id']).where('group_id', 'is not', null)
            : oc.columns(['user_id', 'project_id']).where('project_id', 'is not', null);
      return target.doUpdateSet({ ...changes, updated_at: now });
    })
    .returning(SETTINGS_COLUMNS)
    .executeTakeFirstOrThrow();
  await recordAudit(db, notificationSettingsAudit(audit, user, source, update));
  return toView(row, source, user);
}

/** The one audit event of a notification settings change, whichever path made it. */
function notificationSettingsAudit(
  audit: AuditActor,
  user: Pick<User, 'id'>,
  source: NotificationSource,
  update: NotificationSettingsUpdate,
) {
  // Named, not `...audit`: on Node 20, spreading a fresh object and adding properties takes several
  // microseconds (a new hidden class per call), a measurable part of PUT …/notification_settings.
  return {
    actor: audit.actor,
    ipAddress: audit.ipAddress,
    action: 'notification_settings.update',
    targetType: source.kind === 'global' ? 'user' : source.kind,
    targetId: source.kind === 'global' ? user.id : source.id,
    details: { level: update.level },
  };
}

/** The one-statement read and upsert below, built once per shape (db/statement-templates.ts). */
const readTemplates = statementTemplates<'viewerId' | 'viewerIsAdmin' | 'target'>();
type WriteSlot =
  | 'viewerId'
  | 'viewerIsAdmin'
  | 'target'
  | 'defaultLevel'
  | 'now'
  | 'actor'
  | 'action'
  | 'targetType'
  | 'details'
  | 'ipAddress'
  | `change:${string}`;
const writeTemplates = statementTemplates<WriteSlot>();

/**
 * getNotificationSettings for a group or project named by id or path, in ONE statement: the
 * visible target (visibility.ts) left-joined to the user's row for it. Undefined when there is no
 * such target or the user may not see it (the caller's 404).
 */
export async function getVisibleNotificationSettings(
  db: DbOrTrx,
  user: Pick<User, 'id' | 'email' | 'is_admin'>,
  kind: 'group' | 'project',
  idOrPath: string,
): Promise<NotificationSettingsView | undefined> {
  const target = namespaceTarget(idOrPath);
  if (!target) return undefined;
  const { rows } = await readTemplates.run(
    db,
    `${kind} by ${target.by}`,
    { viewerId: user.id, viewerIsAdmin: user.is_admin, target: target.value },
    (slot) => {
      const visible = visibleNamespaceIdsSql(
        { id: slot('viewerId'), is_admin: slot('viewerIsAdmin') },
        kind,
        target.by,
        slot('target'),
      );
      const column = kind === 'group' ? sql`group_id` : sql`project_id`;
      return sql<
        Pick<SettingsRow, 'level' | 'notification_email' | NotificationEvent> & { id: number; found: boolean }
      >`
    select v.id, s.user_id is not null as found, ${sql.join(SETTINGS_COLUMNS.map((c) => sql`s.${sql.ref(c)}`))}
    from (${visible}) v
    left join notification_settings s on s.user_id = ${slot('viewerId')} and s.${column} = v.id
  `;
    },
  );
  const row = rows[0];
  if (!row) return undefined;
  return toView(row.found ? row : undefined, { kind, id: row.id }, user);
}

/**
 * updateNotificationSettings for a group or project named by id or path, in ONE statement: the
 * upsert selects its target from the visible ones (visibility.ts), so a missing or hidden one
 * writes nothing and answers undefined (the caller's 404).
 */
export async function updateVisibleNotificationSettings(
  db: DbOrTrx,
  user: Pick<User, 'id' | 'email' | 'is_admin' | 'username'>,
  kind: 'group' | 'project',
  idOrPath: string,
  update: NotificationSettingsUpdate,
  audit: AuditActor = { actor: `user:${user.username}` },
): Promise<NotificationSettingsView | undefined> {
  const target = namespaceTarget(idOrPath);
  if (!target) return undefined;
  if (update.notificationEmail !== undefined) throw invalid('notification_email needs updateNotificationSettings');
  const changes: Record<string, unknown> = changeSet(update, undefined);
  const changed = Object.keys(changes);
  const entry = notificationSettingsAudit(audit, user, { kind, id: 0 }, update);
  const values: Record<WriteSlot, unknown> = {
    viewerId: user.id,
    viewerIsAdmin: user.is_admin,
    target: target.value,
    defaultLevel: defaultLevel({ kind, id: 0 }),
    now: new Date(),
    actor: entry.actor,
    action: entry.action,
    targetType: entry.targetType,
    details: JSON.stringify(entry.details),
    ipAddress: entry.ipAddress ?? null,
  };
  for (const c of changed) values[`change:${c}`] = changes[c];
  // The shape: the target's kind and match, and which columns change (each a slot of its own).
  const { rows } = await writeTemplates.run(db, `${kind} by ${target.by}: ${changed.join(',')}`, values, (slot) => {
    const visible = visibleNamespaceIdsSql(
      { id: slot('viewerId'), is_admin: slot('viewerIsAdmin') },
      kind,
      target.by,
      slot('target'),
    );
    const columns: Record<string, unknown> = {
      user_id: slot('viewerId'),
      group_id: kind === 'group' ? sql`v.id` : sql`null`,
      project_id: kind === 'project' ? sql`v.id` : sql`null`,
      level: slot('defaultLevel'),
      ...Object.fromEntries(changed.map((c) => [c, slot(`change:${c}`)])),
      updated_at: slot('now'),
    };
    const names = Object.keys(columns);
    const conflict =
      kind === 'group'
        ? sql`(user_id, group_id) where group_id is not null`
        : sql`(user_id, project_id) where project_id is not null`;
    const set = [...changed, 'updated_at'].map((c) => sql`${sql.ref(c)} = excluded.${sql.ref(c)}`);
    return sql<
      Pick<SettingsRow, 'level' | 'notification_email' | NotificationEvent> & {
        group_id: number | null;
        project_id: number | null;
      }
    >`
    with changed as (
      insert into notification_settings (${sql.join(names.map((c) => sql.ref(c)))})
      select ${sql.join(names.map((c) => columns[c]))} from (${visible}) v
      on conflict ${conflict} do update set ${sql.join(set)}
      returning ${sql.join(SETTINGS_COLUMNS.map((c) => sql.ref(c)))}, group_id, project_id
    ), audited as (
      ${auditInsertFrom('changed', {
        actor: slot('actor'),
        action: slot('action'),
        targetType: slot('targetType'),
        targetId: sql.ref(`changed.${kind}_id`),
        details: sql`${slot('details')}::jsonb`,
        ipAddress: slot('ipAddress'),
      })}
    )
    select ${sql.join(SETTINGS_COLUMNS.map((c) => sql.ref(c)))}, group_id, project_id from changed
  `;
  });
  const row = rows[0];
  if (!row) return undefined;
  const id = (kind === 'group' ? row.group_id : row.project_id)!;
  return toView(row, { kind, id }, user);
}

/**
 * The account page's change: the update and its `notification_settings.update` audit event in one
 * transaction (a refused e-mail rolls both back).
 */
export async function updateNotificationSettingsAudited(
  db: DbOrTrx,
  user: Pick<User, 'id' | 'email' | 'username'>,
  source: NotificationSource,
  update: NotificationSettingsUpdate,
  audit: AuditActor,
): Promise<void> {
  await updateNotificationSettings(db, user, source, update, audit);
}

// Notification recipients (contract §4 "Notification recipients"): who gets the e-mail for an event on
// a project or group, at which address, and why — plus the effective settings of one user.
//
// The rules are GitLab's (app/services/notification_recipients/builder/base.rb,
// app/models/notification_recipient.rb, app/models/notification_setting.rb), with its bugs fixed:
// - effective level: the project's setting, else the nearest non-`global` setting of an ancestor group
//   at ANY depth (GitLab looks at the direct group only, gitlab#19102 / #222840), else the global
//   setting, else `participating` (NotificationRecipient#find_notification_setting);
// - candidates: participants, mentioned users, and "watchers and custom holders" found at the
//   project and EVERY ancestor group (GitLab: project and direct group only,
//   Builder::Base#related_notification_settings_sources). A source counts for a user when the user's
//   setting there is `watch`/`custom`, or `global` (a membership without a row counts as `global`,
//   since GitLab creates that row for every member) while the global level is `watch`/`custom`
//   (Base#source_or_global_setting_by_level_query);
// - filter (NotificationRecipient#notifiable?): access to the target by the visibility rule, not
//   blocked, not the author (own activity), and the level semantics of `levelAllows` below;
// - one entry per user, the highest-priority reason kept (Base#notification_recipients: sort by
//   NotificationReason.priority, uniq by user);
// - address: the nearest group-level notification e-mail up the tree, else the global one, else the
//   primary e-mail (GitLab ignores group e-mails below the top, gitlab#367418).
// A resolution is ONE SQL statement (recursive CTE over the ancestors), whatever the member count.
import { sql } from 'kysely';
import type { DbOrTrx, Group, NotificationLevel, Project, User, Visibility } from '../db/schema';
import { NOTIFICATION_EVENTS, type NotificationEvent } from '../db/schema';
import { DomainError } from './errors';
import { getProjectByPath } from './namespaces';
import { getUserByUsername } from './users';

/** Candidate kinds, as GitLab's recipient types; the order is the reason priority (first wins). */
export const CANDIDATE_KINDS = ['mention', 'participating', 'watch'] as const;
export type CandidateKind = (typeof CANDIDATE_KINDS)[number];

/** Why a recipient is notified, highest priority first. */
export type RecipientReason = 'mentioned' | 'participating' | 'watching' | 'custom';

/** NotificationSetting::EXCLUDED_WATCHER_EVENTS (GitLab 17/18). */
export const EXCLUDED_WATCHER_EVENTS: readonly string[] = ['push_to_merge_request', 'issue_due', 'success_pipeline'];
/** Events a `participating` user gets without taking part (GitLab: pipeline and project-move mails). */
export const PARTICIPATING_EXTRA_EVENTS: readonly string[] = ['failed_pipeline', 'fixed_pipeline', 'moved_project'];

/** Where an effective setting comes from. */
export interface SettingSource {
  type: 'project' | 'group' | 'global';
  id: number | null;
  full_path: string | null;
}

export interface Recipient {
  user_id: number;
  username: string;
  email: string;
  reason: RecipientReason;
  level: NotificationLevel;
  source: SettingSource;
}

/** The thing an event happened on. */
export type RecipientTarget =
  | { kind: 'project'; project: Pick<Project, 'id' | 'group_id' | 'path_with_namespace' | 'visibility'> }
  | { kind: 'group'; group: Pick<Group, 'id' | 'full_path' | 'visibility'> };

export interface RecipientsRequest {
  event: NotificationEvent;
  authorId: number | null;
  participantIds: number[];
  mentionedIds: number[];
}

/** Bad input for a resolution: a 400 with {"error": message}, exit 1 in the CLI. */
export class RecipientsInputError extends DomainError {
  constructor(message: string) {
    super('invalid', message);
    this.name = 'RecipientsInputError';
  }
}

export const MAX_IDS = 10_000;

/**
 * The level rule (NotificationRecipient#suitable_notification_level?) for one candidate entry.
 * `flagOn` is the custom flag of the event in the setting that gave the level.
 * `watch` never gets less than `participating` would: a participant or mentioned watcher is
 * notified even of the events excluded for watchers (GitLab excludes those for both levels; the
 * exclusion is meant for watching, not for taking part).
 */
export function levelAllows(level: NotificationLevel, kind: CandidateKind, event: string, flagOn: boolean): boolean {
  const takesPart = kind === 'participating' || kind === 'mention';
  switch (level) {
    case 'disabled':
      return false;
    case 'mention':
      return kind === 'mention';
    case 'participating':
      return takesPart || PARTICIPATING_EXTRA_EVENTS.includes(event);
    case 'custom':
      return flagOn || takesPart;
    case 'watch':
      return takesPart || !EXCLUDED_WATCHER_EVENTS.includes(event);
    default:
      return false;
  }
}

/** The reason recorded for an entry that passed. */
export const reasonOf = (kind: CandidateKind, level: NotificationLevel): RecipientReason =>
  kind === 'mention'
    ? 'mentioned'
    : kind === 'participating'
      ? 'participating'
      : level === 'custom'
        ? 'custom'
        : 'watching';

const isEvent = (v: unknown): v is NotificationEvent =>
  typeof v === 'string' && (NOTIFICATION_EVENTS as readonly string[]).includes(v);

export function parseEvent(value: unknown): NotificationEvent {
  if (value === undefined || value === null || value === '') throw new RecipientsInputError('event is missing');
  if (!isEvent(value)) throw new RecipientsInputError('event does not have a valid value');
  return value;
}

function parseId(name: string, value: unknown): number {
  const n =
    typeof value === 'number' ? value : typeof value === 'string' && /^\d{1,15}$/.test(value) ? Number(value) : NaN;
  if (!Number.isSafeInteger(n) || n <= 0) throw new RecipientsInputError(`${name} is invalid`);
  return n;
}

function parseIds(name: string, value: unknown): number[] {
  if (value === undefined || value === null || value === '') return [];
  const list = Array.isArray(value) ? value : [value];
  if (list.length > MAX_IDS) throw new RecipientsInputError(`${name} must have at most ${MAX_IDS} ids`);
  const ids = list.map((v) => parseId(name, v));
  const seen = new Set<number>();
  for (const id of ids) {
    if (seen.has(id)) throw new RecipientsInputError(`${name} contains ${id} more than once`);
    seen.add(id);
  }
  return ids;
}

/**
 * Parse request parameters (merged query and body): `event`, `author_id`, `participant_ids`
 * (or `participant_ids[]`), `mentioned_ids` (or `mentioned_ids[]`). Shape checks only; the users
 * themselves are checked by `resolveRecipients`.
 */
export function parseRecipientsRequest(params: Record<string, unknown>): RecipientsRequest {
  const event = parseEvent(params.event);
  const author = params.author_id;
  return {
    event,
    authorId: author === undefined || author === null || author === '' ? null : parseId('author_id', author),
    participantIds: parseIds('participant_ids', params.participant_ids ?? params['participant_ids[]']),
    mentionedIds: parseIds('mentioned_ids', params.mentioned_ids ?? params['mentioned_ids[]']),
  };
}

/** Every named user must exist and be active: one query for all of them. */
async function checkUsers(db: DbOrTrx, request: RecipientsRequest): Promise<void> {
  const named: [string, number[]][] = [
    ['author_id', request.authorId === null ? [] : [request.authorId]],
    ['participant_ids', request.participantIds],
    ['mentioned_ids', request.mentionedIds],
  ];
  const all = [...new Set(named.flatMap(([, ids]) => ids))];
  if (all.length === 0) return;
  const rows = await db.selectFrom('users').select(['id', 'state']).where('id', 'in', all).execute();
  const state = new Map(rows.map((r) => [Number(r.id), r.state]));
  for (const [name, ids] of named) {
    for (const id of ids) {
      const verb = name === 'author_id' ? 'is' : 'contains';
      if (!state.has(id)) throw new RecipientsInputError(`${name} ${verb} an unknown user: ${id}`);
      // A blocked author may not act; a blocked participant is a caller's mistake worth knowing.
      if (state.get(id) === 'blocked') throw new RecipientsInputError(`${name} ${verb} a blocked user: ${id}`);
    }
  }
}

/** The ancestors CTE and the settings/memberships at the target and every ancestor (depth: -1 = project). */
function sourcesSql(target: RecipientTarget, event: NotificationEvent | null) {
  const groupId = target.kind === 'project' ? target.project.group_id : target.group.id;
  const projectId = target.kind === 'project' ? target.project.id : null;
  const projectPath = target.kind === 'project' ? target.project.path_with_namespace : null;
  // fixed_pipeline also fires for those who asked for success_pipeline (GitLab's pipeline mails).
  const flag = (alias: string) =>
    event === null
      ? sql`false`
      : (event as string) === 'fixed_pipeline'
        ? sql`(${sql.ref(`${alias}.fixed_pipeline`)} or ${sql.ref(`${alias}.success_pipeline`)})`
        : sql`${sql.ref(`${alias}.${event}`)}`;
  return {
    projectId,
    flag,
    ctes: sql`
      anc as (
        select id, parent_id, full_path, 0 as depth from groups where id = ${groupId}
        union all
        select g.id, g.parent_id, g.full_path, a.depth + 1 from groups g join anc a on g.id = a.parent_id
        where a.depth < 100
      ),
      src_settings as (
        select ns.user_id, ns.level, ns.notification_email, 'project'::text as source_type,
               ns.project_id as source_id, ${projectPath}::text as full_path, -1 as depth, ${flag('ns')} as flag
          from notification_settings ns where ns.project_id = ${projectId}::bigint
        union all
        select ns.user_id, ns.level, ns.notification_email, 'group', a.id, a.full_path, a.depth, ${flag('ns')}
          from notification_settings ns join anc a on ns.group_id = a.id
      ),
      src_members as (
        select m.user_id, 'project'::text as source_type, m.project_id as source_id
          from members m where m.project_id = ${projectId}::bigint
        union all
        select m.user_id, 'group', m.group_id from members m join anc a on m.group_id = a.id
      )`,
  };
}

interface ResolvedRow {
  user_id: string | number;
  username: string;
  email: string;
  kind: CandidateKind;
  level: NotificationLevel;
  source_type: SettingSource['type'];
  source_id: string | number | null;
  full_path: string | null;
}

/**
 * Resolve the recipients of `request.event` on the target. Validates the named users (one
 * query), then resolves in one statement. Sorted by user id.
 */
export async function resolveRecipients(
  db: DbOrTrx,
  target: RecipientTarget,
  request: RecipientsRequest,
): Promise<Recipient[]> {
  await checkUsers(db, request);
  const { rows } = await recipientsQuery(target, request).execute(db);
  return rows.map((r) => ({
    user_id: Number(r.user_id),
    username: r.username,
    email: r.email,
    reason: reasonOf(r.kind, r.level),
    level: r.level,
    source: {
      type: r.source_type,
      id: r.source_id === null ? null : Number(r.source_id),
      full_path: r.full_path,
    },
  }));
}

/** The resolution statement itself (exported for EXPLAIN in bench/). */
export function recipientsQuery(target: RecipientTarget, request: RecipientsRequest) {
  const { event } = request;
  const { ctes, flag } = sourcesSql(target, event);
  const visibility: Visibility = target.kind === 'project' ? target.project.visibility : target.group.visibility;
  return sql<ResolvedRow>`
    with recursive ${ctes},
    glob as (
      select g.user_id, g.level, g.notification_email, ${flag('g')} as flag
        from notification_settings g where g.group_id is null and g.project_id is null
    ),
    -- Watchers and custom holders at every source (GitLab's source_or_global_setting_by_level_query).
    holders as (
      select s.user_id from src_settings s left join glob g on g.user_id = s.user_id
       where s.level in ('watch', 'custom') or (s.level = 'global' and g.level in ('watch', 'custom'))
      union
      select m.user_id from src_members m join glob g on g.user_id = m.user_id
       where g.level in ('watch', 'custom')
         and not exists (select 1 from src_settings s where s.user_id = m.user_id
                            and s.source_type = m.source_type and s.source_id = m.source_id)
    ),
    cand as (
      select unnest(${request.mentionedIds}::bigint[]) as user_id, 'mention'::text as kind
      union all select unnest(${request.participantIds}::bigint[]), 'participating'
      union all select user_id, 'watch' from holders
    ),
    nearest as (
      select distinct on (s.user_id) s.user_id, s.level, s.source_type, s.source_id, s.full_path, s.flag
        from src_settings s where s.level <> 'global' order by s.user_id, s.depth
    ),
    address as (
      select distinct on (s.user_id) s.user_id, s.notification_email
        from src_settings s where s.notification_email is not null and s.source_type = 'group'
       order by s.user_id, s.depth
    ),
    eff as (
      select u.id as user_id, u.username,
             coalesce(a.notification_email, g.notification_email, u.email) as email,
             coalesce(n.level, case when g.level is null or g.level = 'global' then 'participating' else g.level end) as level,
             case when n.user_id is null then 'global' else n.source_type end as source_type,
             n.source_id, n.full_path,
             coalesce(n.flag, g.flag, false) as flag
        from (select distinct user_id from cand) c
        join users u on u.id = c.user_id
        left join nearest n on n.user_id = c.user_id
        left join glob g on g.user_id = c.user_id
        left join address a on a.user_id = c.user_id
       where u.state = 'active'
         and u.id is distinct from ${request.authorId}::bigint
         -- IN, not EXISTS: under OR only IN becomes one hashed subplan instead of a scan per user.
         and (${visibility}::text <> 'private' or u.is_admin or u.id in (select user_id from src_members))
    )
    select distinct on (e.user_id) e.user_id, e.username, e.email, c.kind, e.level, e.source_type, e.source_id, e.full_path
      from eff e join cand c on c.user_id = e.user_id
     where case e.level
             when 'disabled' then false
             when 'mention' then c.kind = 'mention'
             when 'participating' then c.kind <> 'watch' or ${PARTICIPATING_EXTRA_EVENTS.includes(event)}
             when 'custom' then e.flag or c.kind <> 'watch'
             when 'watch' then c.kind <> 'watch' or not ${EXCLUDED_WATCHER_EVENTS.includes(event)}
             else false
           end
     order by e.user_id, case c.kind when 'mention' then 0 when 'participating' then 1 else 2 end
  `;
}

/** The effective notification settings of one user on a project or group. */
export interface EffectiveSettings {
  level: NotificationLevel;
  source: SettingSource;
  notification_email: string;
  /** The flags of the setting that gave the level (all false for the default). */
  events: Record<NotificationEvent, boolean>;
  /** Each setting looked at, nearest first, then the global one (for `notify explain`). */
  chain: { source: SettingSource; level: NotificationLevel | null; notification_email: string | null }[];
}

/** The user's effective settings on the target: one statement over the target and its ancestors. */
export async function effectiveSettings(
  db: DbOrTrx,
  user: Pick<User, 'id' | 'email'>,
  target: RecipientTarget,
): Promise<EffectiveSettings> {
  const { ctes } = sourcesSql(target, null);
  const flagColumns = sql.join(NOTIFICATION_EVENTS.map((e) => sql.ref(`ns.${e}`)));
  const { rows } = await sql<
    {
      source_type: SettingSource['type'];
      source_id: string | number | null;
      full_path: string | null;
      depth: number;
      level: NotificationLevel;
      notification_email: string | null;
    } & Record<NotificationEvent, boolean>
  >`
    with recursive ${ctes}
    select s.source_type, s.source_id, s.full_path, s.depth, ns.level, ns.notification_email, ${flagColumns}
      from src_settings s
      join notification_settings ns on ns.user_id = s.user_id
       and (case when s.source_type = 'project' then ns.project_id else ns.group_id end) = s.source_id
     where s.user_id = ${user.id}
    union all
    select 'global', null, null, 1000000, ns.level, ns.notification_email, ${flagColumns}
      from notification_settings ns
     where ns.user_id = ${user.id} and ns.group_id is null and ns.project_id is null
    order by depth
  `.execute(db);
  const chain = rows.map((r) => ({
    source: { type: r.source_type, id: r.source_id === null ? null : Number(r.source_id), full_path: r.full_path },
    level: r.level,
    notification_email: r.notification_email,
  }));
  const global = rows.find((r) => r.source_type === 'global');
  const decisive =
    rows.find((r) => r.source_type !== 'global' && r.level !== 'global') ??
    (global && global.level !== 'global' ? global : undefined);
  const address =
    rows.find((r) => r.source_type === 'group' && r.notification_email)?.notification_email ??
    global?.notification_email ??
    user.email;
  return {
    level: decisive?.level ?? 'participating',
    source: decisive
      ? {
          type: decisive.source_type,
          id: decisive.source_id === null ? null : Number(decisive.source_id),
          full_path: decisive.full_path,
        }
      : { type: 'global', id: null, full_path: null },
    notification_email: address,
    events: Object.fromEntries(NOTIFICATION_EVENTS.map((e) => [e, decisive?.[e] === true])) as Record<
      NotificationEvent,
      boolean
    >,
    chain,
  };
}

/** One step of `notify explain`: what was looked at and what it decided. */
export interface ExplainStep {
  step: string;
  detail: string;
}

export interface Explanation {
  steps: ExplainStep[];
  /** The engine's own answer for this user (the same statement as resolveRecipients). */
  recipient: Recipient | null;
}

const describeSource = (s: SettingSource) => (s.type === 'global' ? 'global' : `${s.type} ${s.full_path}`);

/**
 * Why one user is or is not notified: each step of the decision, in the order the rules apply,
 * and the engine's answer (the steps are computed here in TypeScript from the same rows, so a
 * disagreement with the engine would show).
 */
export async function explainRecipient(
  db: DbOrTrx,
  target: RecipientTarget,
  request: RecipientsRequest,
  user: Pick<User, 'id' | 'username' | 'email' | 'state' | 'is_admin'>,
): Promise<Explanation> {
  const recipients = await resolveRecipients(db, target, request);
  const recipient = recipients.find((r) => r.user_id === user.id) ?? null;
  const steps: ExplainStep[] = [];
  const visibility = target.kind === 'project' ? target.project.visibility : target.group.visibility;
  const targetName =
    target.kind === 'project' ? `project ${target.project.path_with_namespace}` : `group ${target.group.full_path}`;
  steps.push({ step: 'event', detail: `${request.event} on ${targetName} (${visibility})` });

  const { ctes } = sourcesSql(target, null);
  const { rows: memberships } = await sql<{ source_type: string; source_id: string | number }>`
    with recursive ${ctes} select source_type, source_id from src_members where user_id = ${user.id}
  `.execute(db);
  const isMember = memberships.length > 0;
  steps.push({ step: 'state', detail: user.state === 'active' ? 'active' : 'blocked: never notified' });
  steps.push({
    step: 'access',
    detail:
      visibility !== 'private'
        ? `${visibility}: every user may read it`
        : user.is_admin
          ? 'private, but an administrator reads everything'
          : isMember
            ? 'private; member of it or of an ancestor group'
            : 'private and not a member: never notified',
  });
  steps.push({
    step: 'own activity',
    detail: request.authorId === user.id ? 'the author: never notified of their own activity' : 'not the author',
  });

  const eff = await effectiveSettings(db, user, target);
  for (const link of eff.chain) {
    steps.push({
      step: 'setting',
      detail: `${describeSource(link.source)}: ${link.level}${link.notification_email ? ` (e-mail ${link.notification_email})` : ''}`,
    });
  }
  steps.push({ step: 'effective level', detail: `${eff.level} (from ${describeSource(eff.source)})` });

  const kinds: CandidateKind[] = [];
  if (request.mentionedIds.includes(user.id)) kinds.push('mention');
  if (request.participantIds.includes(user.id)) kinds.push('participating');
  const globalLevel = eff.chain.find((c) => c.source.type === 'global')?.level ?? 'participating';
  const holdsAt = eff.chain
    .filter((c) => c.source.type !== 'global')
    .filter(
      (c) =>
        c.level === 'watch' ||
        c.level === 'custom' ||
        (c.level === 'global' && (globalLevel === 'watch' || globalLevel === 'custom')),
    )
    .map((c) => describeSource(c.source));
  if (globalLevel === 'watch' || globalLevel === 'custom') {
    for (const m of memberships) {
      const has = eff.chain.some((c) => c.source.type === m.source_type && c.source.id === Number(m.source_id));
      if (!has) holdsAt.push(`membership of ${m.source_type} ${m.source_id} (global level ${globalLevel})`);
    }
  }
  if (holdsAt.length) kinds.push('watch');
  steps.push({
    step: 'candidate',
    detail: kinds.length
      ? [
          ...(kinds.includes('mention') ? ['mentioned'] : []),
          ...(kinds.includes('participating') ? ['participant'] : []),
          ...(holdsAt.length ? [`watcher/custom holder at ${holdsAt.join(', ')}`] : []),
        ].join('; ')
      : 'neither participant, mentioned, watcher nor custom holder: not a candidate',
  });
  const flagOn =
    eff.events[request.event] || ((request.event as string) === 'fixed_pipeline' && eff.events.success_pipeline);
  for (const kind of kinds) {
    const ok = levelAllows(eff.level, kind, request.event, flagOn);
    steps.push({
      step: 'level rule',
      detail: `${eff.level} ${ok ? 'lets' : 'does not let'} a ${kind} candidate through for ${request.event}${
        eff.level === 'custom' ? ` (flag ${request.event} ${flagOn ? 'on' : 'off'})` : ''
      }`,
    });
  }
  steps.push({
    step: 'result',
    detail: recipient ? `notified (${recipient.reason}) at ${recipient.email}` : 'not notified',
  });
  return { steps, recipient };
}

/** The admin CLI's form of a request: a project path and usernames, checked as the API checks ids. */
export async function requestFromNames(
  db: DbOrTrx,
  input: { project: string; event: string; author?: string; participants?: string[]; mentioned?: string[] },
): Promise<{ target: RecipientTarget; request: RecipientsRequest }> {
  const event = parseEvent(input.event);
  const project = await getProjectByPath(db, input.project);
  const idOf = async (username: string) => (await getUserByUsername(db, username)).id;
  const ids = async (name: string, usernames: string[] = []) => parseIds(name, await Promise.all(usernames.map(idOf)));
  return {
    target: { kind: 'project', project },
    request: {
      event,
      authorId: input.author ? await idOf(input.author) : null,
      participantIds: await ids('participant_ids', input.participants),
      mentionedIds: await ids('mentioned_ids', input.mentioned),
    },
  };
}

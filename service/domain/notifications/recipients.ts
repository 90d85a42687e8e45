// Notification recipients (contract §4 "Notification recipients"): who gets the e-mail for an event
// on a project or group, at which address and why. GitLab's rules
// (app/services/notification_recipients/builder/base.rb gathers candidates,
// app/models/notification_recipient.rb decides), with its bugs fixed (sources.ts, address.ts):
// - candidates: the mentioned and the participants (given by the caller), and the watchers and
//   custom holders at the target and EVERY ancestor group (holdersCte, found through the settings
//   indexes of migration 0013, never by scanning the members of the tree);
// - for the candidates only: not blocked, not the author, may see the target (visibility.ts's one
//   predicate), and the level rule of levels.ts on their effective settings (effective.ts);
// - one entry per user, the highest-priority reason kept (Base#notification_recipients).
// A resolution is ONE statement whose cost follows the candidates, not the members of the tree.
import { type RawBuilder, sql } from 'kysely';
import type { DbOrTrx, Group, NotificationLevel, Project } from '../../db/schema';
import { NOTIFICATION_EVENTS, type NotificationEvent } from '../../db/schema';
import { DomainError } from '../errors';
import { getProjectByPath } from '../namespaces';
import { getUserByUsername } from '../users';
import { visibleSql } from '../visibility';
import {
  decisiveSql,
  type EffectiveRow,
  effectiveColumns,
  effectiveCtes,
  type SettingSource,
  sourceOf,
  targetSourcesCte,
} from './effective';
import {
  CANDIDATE_KINDS,
  type CandidateKind,
  flagSql,
  HOLDER_LEVELS,
  holdsSql,
  INHERIT,
  levelAllowsSql,
  type RecipientReason,
  reasonOf,
} from './levels';

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

/** Bad input for a resolution: a 400 with {"error": message} on the API, exit 1 in the CLI. */
class RecipientsInputError extends DomainError {
  constructor(message: string) {
    super('invalid', message, undefined, 'error');
    this.name = 'RecipientsInputError';
  }
}

const MAX_IDS = 10_000;

const isEvent = (v: unknown): v is NotificationEvent =>
  typeof v === 'string' && (NOTIFICATION_EVENTS as readonly string[]).includes(v);

function parseEvent(value: unknown): NotificationEvent {
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

/** The visibility predicate for the candidate `u` on the target. */
const targetVisibleSql = (target: RecipientTarget): RawBuilder<boolean> =>
  visibleSql(
    { id: sql`u.id`, isAdmin: sql`u.is_admin` },
    target.kind === 'project'
      ? {
          visibility: sql`${target.project.visibility}::text`,
          groupId: sql`${target.project.group_id}::bigint`,
          projectId: sql`${target.project.id}::bigint`,
        }
      : { visibility: sql`${target.group.visibility}::text`, groupId: sql`${target.group.id}::bigint` },
  );

/**
 * After `sources`: `holders(user_id, source_type, source_id, full_path, depth, level_there, global_level)`,
 * one row per source where a user holds a setting (levels.ts's holdsSql). Found from the settings
 * side: the rows at the sources whose level may hold (index on source and level), and the users
 * whose global level holds (index on the global level) with a membership but no row at a source.
 */
export const holdersCte = sql`
  global_holders as (
    select user_id, level from notification_settings
     where group_id is null and project_id is null and level = any(${HOLDER_LEVELS}::text[])
  ),
  rows_there as (
    select ns.user_id, s.source_type, s.source_id, s.full_path, s.depth, ns.level
      from sources s join notification_settings ns on ns.group_id = s.source_id
     where s.source_type = 'group' and ns.level = any(${[...HOLDER_LEVELS, INHERIT]}::text[])
    union all
    select ns.user_id, s.source_type, s.source_id, s.full_path, s.depth, ns.level
      from sources s join notification_settings ns on ns.project_id = s.source_id
     where s.source_type = 'project' and ns.level = any(${[...HOLDER_LEVELS, INHERIT]}::text[])
  ),
  holders as (
    select r.user_id, r.source_type, r.source_id, r.full_path, r.depth, r.level as level_there, gh.level as global_level
      from rows_there r left join global_holders gh on gh.user_id = r.user_id
     where ${holdsSql(sql`r.level`, sql`gh.level`)}
    union all
    -- From each global holder to their memberships at the sources (LATERAL: an index probe per
    -- holder, never a scan of the tree's members), where they have no row.
    select gh.user_id, s.source_type, s.source_id, s.full_path, s.depth, null, gh.level
      from global_holders gh
      cross join lateral (
        select 'group'::text as source_type, m.group_id as source_id from members m
         where m.user_id = gh.user_id and m.group_id in (select source_id from sources where source_type = 'group')
           and not exists (select 1 from notification_settings x where x.user_id = m.user_id and x.group_id = m.group_id)
        union all
        select 'project', m.project_id from members m
         where m.user_id = gh.user_id and m.project_id in (select source_id from sources where source_type = 'project')
           and not exists (select 1 from notification_settings x where x.user_id = m.user_id and x.project_id = m.project_id)
      ) ms
      join sources s on s.source_type = ms.source_type and s.source_id = ms.source_id
     where ${holdsSql(sql`null::text`, sql`gh.level`)}
  )`;

type ResolvedRow = EffectiveRow & { user_id: string | number; username: string; kind: CandidateKind };

/** `has_<kind>` for each candidate kind: whether the user is a candidate of that kind. */
const hasKind = (kind: CandidateKind) => sql.ref(`has_${kind}`);

/** The resolution statement itself. */
function recipientsQuery(target: RecipientTarget, request: RecipientsRequest) {
  const { event } = request;
  // The first kind, in priority order, that the level lets through: the reason kept.
  const kept = sql`case ${sql.join(
    CANDIDATE_KINDS.map(
      (k) => sql`when e.${hasKind(k)} and ${levelAllowsSql(sql`e.level`, k, sql`e.flag`, event)} then ${k}`,
    ),
    sql` `,
  )} end`;
  return sql<ResolvedRow>`
    with recursive ${targetSourcesCte(target)}, ${holdersCte},
    ${effectiveCtes(undefined, [sql`${flagSql('ns', event)} as flag`], ['flag'])},
    -- One row per candidate with a flag per kind (plain aggregates: no per-user arrays).
    cand as (
      select user_id, ${sql.join(CANDIDATE_KINDS.map((k) => sql`bool_or(kind = ${k}) as ${hasKind(k)}`))}
        from (
          select unnest(${request.mentionedIds}::bigint[]) as user_id, 'mention'::text as kind
          union all select unnest(${request.participantIds}::bigint[]), 'participating'
          union all select user_id, 'watch' from holders
        ) k
       group by user_id
    ),
    eff as (
      select u.id as user_id, u.username, ${sql.join(CANDIDATE_KINDS.map((k) => sql`c.${hasKind(k)}`))},
             ${effectiveColumns}, ${decisiveSql(sql`n.flag`, flagSql('g', event))} as flag
        from cand c join users u on u.id = c.user_id
        left join nearest n on n.user_id = u.id
        left join notification_settings g on g.user_id = u.id and g.group_id is null and g.project_id is null
       where u.state = 'active' and u.id is distinct from ${request.authorId}::bigint and ${targetVisibleSql(target)}
    )
    select * from (
      select e.user_id, e.username, e.email, ${kept} as kind, e.level, e.source_type, e.source_id, e.full_path from eff e
      offset 0 -- the reason computed once per candidate, not again for the filter below
    ) r
     where kind is not null
     order by user_id
  `;
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
    source: sourceOf(r),
  }));
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

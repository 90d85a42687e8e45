// Notification recipients (contract §4 "Notification recipients"): who gets the e-mail for an event
// on a project or group, at which address and why. GitLab's rules
// (app/services/notification_recipients/builder/base.rb gathers candidates,
// app/models/notification_recipient.rb decides), with its bugs fixed (sources.ts, address.ts):
// - candidates: the mentioned and the participants (given by the caller), and the watchers and
//   custom holders at the target and EVERY ancestor group — read from the target's subscriptions
//   (subscriptions.ts: the list the database keeps of them, with their effective settings);
// - for the candidates only: not blocked, not the author, the level rule of levels.ts on their
//   effective settings (the list's, or effective.ts's for a named user not on it), and may see the
//   target (visibility.ts's one predicate);
// - one entry per user, the highest-priority reason kept (Base#notification_recipients).
// A resolution is ONE statement whose cost follows the candidates, not the members of the tree.
import { type RawBuilder, sql } from 'kysely';
import type { DbOrTrx, Group, NotificationLevel, Project } from '../../db/schema';
import { NOTIFICATION_EVENTS, type NotificationEvent } from '../../db/schema';
import { runStatement } from '../../db/hot-statements';
import { DomainError } from '../errors';
import { getProjectByPath } from '../namespaces';
import { getUserByUsername } from '../users';
import { visibleSql } from '../visibility';
import { addressSql } from './address';
import {
  decisiveSql,
  type EffectiveRow,
  effectiveCtes,
  effectiveLevelColumnsSql,
  type SettingSource,
  sourceOf,
  targetSourcesCte,
} from './effective';
import {
  CANDIDATE_KINDS,
  type CandidateKind,
  flagSql,
  levelAllowsSql,
  packedFlagSql,
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

/** The state of the named users (one statement; on the pool's direct path like the resolution). */
const usersStateQuery = (db: DbOrTrx, ids: number[]) =>
  db.selectFrom('users').select(['id', 'state']).where('id', '=', sql<number>`any(${ids}::bigint[])`).compile();

/** Every named user must exist and be active: one query for all of them. */
async function checkUsers(db: DbOrTrx, request: RecipientsRequest): Promise<void> {
  const named: [string, number[]][] = [
    ['author_id', request.authorId === null ? [] : [request.authorId]],
    ['participant_ids', request.participantIds],
    ['mentioned_ids', request.mentionedIds],
  ];
  const all = [...new Set(named.flatMap(([, ids]) => ids))];
  if (all.length === 0) return;
  const { rows } = await runStatement(db, usersStateQuery(db, all));
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
    { id: sql`r.user_id`, isAdmin: sql`r.is_admin`, member: sql`r.member` },
    target.kind === 'project'
      ? {
          visibility: sql`${target.project.visibility}::text`,
          groupId: sql`${target.project.group_id}::bigint`,
          projectId: sql`${target.project.id}::bigint`,
        }
      : { visibility: sql`${target.group.visibility}::text`, groupId: sql`${target.group.id}::bigint` },
  );

type ResolvedRow = EffectiveRow & { user_id: string | number; username: string; kind: CandidateKind };

/** `has_<kind>` for each candidate kind: whether the user is a candidate of that kind. */
const hasKind = (kind: CandidateKind) => sql.ref(`has_${kind}`);

/** The kinds a caller names (every kind but the watchers, which the subscriptions give). */
const NAMED_KINDS = CANDIDATE_KINDS.filter((k) => k !== 'watch');

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
  const listed =
    target.kind === 'project'
      ? sql`s.project_id = ${target.project.id}::bigint and s.project_id is not null`
      : sql`s.group_id = ${target.group.id}::bigint and s.group_id is not null`;
  const ids: Record<(typeof NAMED_KINDS)[number], number[]> = {
    mention: request.mentionedIds,
    participating: request.participantIds,
  };
  return sql<ResolvedRow>`
    with recursive ${targetSourcesCte(target)},
    -- The named users (mentioned, participants), one row each with a flag per kind.
    named as (
      select user_id, ${sql.join(NAMED_KINDS.map((k) => sql`bool_or(kind = ${k}) as ${hasKind(k)}`))}
        from (${sql.join(
          NAMED_KINDS.map((k) => sql`select unnest(${ids[k]}::bigint[]) as user_id, ${k}::text as kind`),
          sql` union all `,
        )}) k
       group by user_id
    ),
    -- The watchers and custom holders, with their effective settings: the target's subscriptions.
    listed as (
      select s.user_id, s.level, s.source_type, s.source_id, s.flags, s.group_email, s.global_email, s.member
        from notification_subscriptions s where ${listed}
    ),
    -- The effective settings of the named users who are not listed.
    ${effectiveCtes(sql`select user_id from named`, [sql`${flagSql('ns', event)} as flag`], ['flag'])},
    cand as (
      select l.user_id, ${sql.join(NAMED_KINDS.map((k) => sql`coalesce(nm.${hasKind(k)}, false) as ${hasKind(k)}`))},
             true as ${hasKind('watch')}, l.level, l.source_type, l.source_id,
             ${packedFlagSql(sql`l.flags`, event)} as flag, l.group_email, l.global_email, l.member
        from listed l left join named nm on nm.user_id = l.user_id
      union all
      select nm.user_id, ${sql.join(NAMED_KINDS.map((k) => sql`nm.${hasKind(k)}`))}, false, ${effectiveLevelColumnsSql},
             ${decisiveSql(sql`n.flag`, flagSql('g', event))}, n.group_email, g.notification_email, null
        from named nm
        left join nearest n on n.user_id = nm.user_id
        left join lateral (
          select * from notification_settings g where g.user_id = nm.user_id and g.group_id is null and g.project_id is null
        ) g on true
       -- Not listed: asked of the list's index, so that \`listed\` is read once and never materialized.
       where not exists (select 1 from notification_subscriptions s where s.user_id = nm.user_id and ${listed})
    ),
    eff as (
      select u.id as user_id, u.username, u.is_admin, ${sql.join(CANDIDATE_KINDS.map((k) => sql`c.${hasKind(k)}`))},
             c.level, c.source_type, c.source_id, c.flag, c.member,
             ${addressSql({ group: sql`c.group_email`, global: sql`c.global_email`, primary: sql`u.email` })} as email
        from cand c join users u on u.id = c.user_id
       where u.state = 'active' and u.id is distinct from ${request.authorId}::bigint
    )
    select r.user_id, r.username, r.email, r.kind, r.level, r.source_type, r.source_id, src.full_path from (
      select e.user_id, e.username, e.is_admin, e.member, e.email, ${kept} as kind, e.level, e.source_type, e.source_id
        from eff e
      offset 0 -- the reason computed once per candidate, and the visibility checked only where one was kept
    ) r
      left join sources src on src.source_type = r.source_type and src.source_id = r.source_id
     where r.kind is not null and ${targetVisibleSql(target)}
     order by r.user_id
  `;
}

/**
 * Resolve the recipients of `request.event` on the target, in one statement, beside one query that
 * validates the named users. Sorted by user id.
 */
export async function resolveRecipients(
  db: DbOrTrx,
  target: RecipientTarget,
  request: RecipientsRequest,
): Promise<Recipient[]> {
  // The check and the resolution go out together (on two of the pool's connections, or one after
  // the other in a transaction): the resolution only reads, and a failed check discards its rows.
  const [checked, resolved] = await Promise.allSettled([
    checkUsers(db, request),
    runStatement(db, recipientsQuery(target, request).compile(db)),
  ]);
  if (checked.status === 'rejected') throw checked.reason;
  if (resolved.status === 'rejected') throw resolved.reason;
  return resolved.value.rows.map((r) => ({
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

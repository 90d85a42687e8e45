// The groups and projects on the account page (/-/profile/notifications), as GitLab's: those the
// user is a member of (directly or through an ancestor group) and any they set a level on — only
// those the user may see (visibility.ts's predicate; a level set on a public group must not reveal
// its private subgroups and projects) — each with its own level and the effective one, read with
// the same ancestor walk and effective-level SQL as the recipients.
import { sql } from 'kysely';
import type { DbOrTrx, NotificationLevel, User } from '../../db/schema';
import { viewerSql, visibleSql } from '../visibility';
import { type EffectiveRow, effectiveColumns, effectiveCtes, effectiveJoins } from './effective';
import { INHERIT } from './levels';
import { sourcesCte } from './sources';

export interface NotificationTarget {
  kind: 'group' | 'project';
  id: number;
  name: string;
  fullPath: string;
  /** The target's own level (`global` when it has none). */
  level: NotificationLevel;
  effective: NotificationLevel;
  /** Where the effective level comes from: this target, an ancestor group's path, or global. */
  from: { kind: 'self' } | { kind: 'group'; fullPath: string } | { kind: 'global' };
}

/** The page's groups and projects in one statement, each sorted by full path. */
export async function listNotificationTargets(
  db: DbOrTrx,
  user: Pick<User, 'id' | 'is_admin'>,
): Promise<{ groups: NotificationTarget[]; projects: NotificationTarget[] }> {
  const me = viewerSql(user);
  const { rows } = await sql<
    EffectiveRow & {
      target_type: 'group' | 'project';
      target_id: string;
      name: string;
      target_path: string;
      own: NotificationLevel;
    }
  >`
    with recursive listed_groups as (
      select group_id as id from members where user_id = ${user.id} and group_id is not null
      union select group_id from notification_settings where user_id = ${user.id} and group_id is not null
      union select g.id from groups g join listed_groups l on g.parent_id = l.id
    ),
    listed_projects as (
      select id from projects where group_id in (select id from listed_groups)
      union select project_id from members where user_id = ${user.id} and project_id is not null
      union select project_id from notification_settings where user_id = ${user.id} and project_id is not null
    ),
    ${sourcesCte({
      groups: sql`select g.id from groups g where g.id in (select id from listed_groups)
        and ${visibleSql(me, { visibility: sql`g.visibility`, groupId: sql`g.id` })}`,
      projects: sql`select p.id from projects p where p.id in (select id from listed_projects)
        and ${visibleSql(me, { visibility: sql`p.visibility`, groupId: sql`p.group_id`, projectId: sql`p.id` })}`,
    })},
    ${effectiveCtes(sql`select ${user.id}::bigint`)}
    select t.target_type, t.target_id, t.full_path as target_path, ${effectiveColumns},
      coalesce(own.level, ${INHERIT}) as own,
      case t.target_type when 'group' then (select name from groups where id = t.target_id)
        else (select name from projects where id = t.target_id) end as name
      from sources t cross join users u ${effectiveJoins}
      left join at_sources own on own.target_type = t.target_type and own.target_id = t.target_id and own.depth = 0
     where t.depth = 0 and u.id = ${user.id}
     order by t.full_path
  `.execute(db);
  const targets = rows.map(
    (r): NotificationTarget => ({
      kind: r.target_type,
      id: Number(r.target_id),
      name: r.name,
      fullPath: r.target_path,
      level: r.own,
      effective: r.level,
      from:
        r.source_type === 'global'
          ? { kind: 'global' }
          : r.source_type === r.target_type && Number(r.source_id) === Number(r.target_id)
            ? { kind: 'self' }
            : { kind: 'group', fullPath: r.full_path ?? '' },
    }),
  );
  return { groups: targets.filter((t) => t.kind === 'group'), projects: targets.filter((t) => t.kind === 'project') };
}

// The groups and projects on the account page (/-/profile/notifications), as GitLab's: those the
// user is a member of (directly or through an ancestor group) and any they set a level on — only
// those the user may see (visibility.ts's predicate; a level set on a public group must not reveal
// its private subgroups and projects) — each with its own level and the effective one, read with
// the same ancestor walk and effective-level SQL as the recipients.
import { sql } from 'kysely';
import type { DbOrTrx, NotificationLevel, User } from '../../db/schema';
import type { Page } from '../page';
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

type Window = { limit: number; offset: number };

/**
 * The page's groups and projects in one statement, each sorted by full path, each list windowed
 * on its own (20 a page on the page) with its total: every list's first row comes back even when
 * its window is past the end, to carry the total. Without windows: every row.
 */
export async function listNotificationTargets(
  db: DbOrTrx,
  user: Pick<User, 'id' | 'is_admin'>,
  windows?: { groups: Window; projects: Window },
): Promise<{ groups: Page<NotificationTarget>; projects: Page<NotificationTarget> }> {
  const me = viewerSql(user);
  const inWindow = (kind: 'group' | 'project', w: Window) =>
    sql`(target_type = ${kind} and rn > ${w.offset} and rn <= ${w.offset + w.limit})`;
  const { rows } = await sql<
    EffectiveRow & {
      target_type: 'group' | 'project';
      target_id: string;
      name: string;
      target_path: string;
      own: NotificationLevel;
      rn: string;
      total: string;
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
    ${effectiveCtes(sql`select ${user.id}::bigint`)},
    listed as (
    select row_number() over (partition by t.target_type order by t.full_path) as rn,
      count(*) over (partition by t.target_type) as total,
      t.target_type, t.target_id, t.full_path as target_path, ${effectiveColumns},
      coalesce(own.level, ${INHERIT}) as own,
      case t.target_type when 'group' then (select name from groups where id = t.target_id)
        else (select name from projects where id = t.target_id) end as name
      from sources t cross join users u ${effectiveJoins}
      left join at_sources own on own.target_type = t.target_type and own.target_id = t.target_id and own.depth = 0
     where t.depth = 0 and u.id = ${user.id}
    )
    select rn, total, target_type, target_id, target_path, level, source_type, source_id, full_path, email, own, name
      from listed
    ${windows ? sql`where rn = 1 or ${inWindow('group', windows.groups)} or ${inWindow('project', windows.projects)}` : sql``}
     order by target_type, rn
  `.execute(db);
  const inPage = (r: { target_type: 'group' | 'project'; rn: string }) => {
    const w = windows?.[r.target_type === 'group' ? 'groups' : 'projects'];
    return !w || (Number(r.rn) > w.offset && Number(r.rn) <= w.offset + w.limit);
  };
  const pageOf = (kind: 'group' | 'project'): Page<NotificationTarget> => {
    const listed = rows.filter((r) => r.target_type === kind);
    return { total: listed.length > 0 ? Number(listed[0].total) : 0, rows: listed.filter(inPage).map(targetOf) };
  };
  return { groups: pageOf('group'), projects: pageOf('project') };
}

const targetOf = (
  r: EffectiveRow & {
    target_type: 'group' | 'project';
    target_id: string;
    name: string;
    target_path: string;
    own: NotificationLevel;
  },
): NotificationTarget => ({
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
});

// The ancestor walk, once: for each target (a project or a group), the target itself and every
// ancestor group up to the root, nearest first — the "sources" a user's settings are read from
// (gitlab#19102: every depth counts, not just the direct group). The recipients statement,
// `notify explain`, the effective settings and the account page all start from this CTE, and
// read the settings rows at the sources through settingsAtSourcesSql.
import { type RawBuilder, sql } from 'kysely';

/** A group or project a setting can apply to. */
export type SourceType = 'project' | 'group';

/**
 * `sources(target_type, target_id, source_type, source_id, full_path, parent_id, depth)`, to be placed
 * in a `with recursive`: depth 0 is the target itself, 1 its group (for a project) or parent, and so
 * on up. `projects` and `groups` are queries (or `select <id>`) of the target ids.
 */
export function sourcesCte(targets: {
  projects?: RawBuilder<unknown>;
  groups?: RawBuilder<unknown>;
}): RawBuilder<unknown> {
  const none = sql`select null::bigint where false`;
  // Aliases no caller uses: the target queries may be correlated to the caller's own rows (g, p, n).
  return sql`
    sources (target_type, target_id, source_type, source_id, full_path, parent_id, depth) as (
      select 'project'::text, walk_p.id, 'project'::text, walk_p.id, walk_p.path_with_namespace, walk_p.group_id, 0
        from projects walk_p where walk_p.id in (${targets.projects ?? none})
      union all
      select 'group'::text, walk_g.id, 'group'::text, walk_g.id, walk_g.full_path, walk_g.parent_id, 0
        from groups walk_g where walk_g.id in (${targets.groups ?? none})
      union all
      select walk_s.target_type, walk_s.target_id, 'group'::text, walk_up.id, walk_up.full_path, walk_up.parent_id,
             walk_s.depth + 1
        from sources walk_s join groups walk_up on walk_up.id = walk_s.parent_id
       where walk_s.depth < 100
    )`;
}

/**
 * The settings rows at the sources (needs `sources`): one row per target, source and user, with
 * the row's `level`, `notification_email` and the extra `columns` (each `expression as alias` over
 * ns). `users` restricts the users (a query of user ids); without it, every user's row at the
 * sources. The group and project halves are separate so each is an index look-up by source.
 */
export function settingsAtSourcesSql(
  users?: RawBuilder<unknown>,
  columns: RawBuilder<unknown>[] = [],
): RawBuilder<unknown> {
  const extra = columns.length ? sql`, ${sql.join(columns)}` : sql``;
  const select = sql`select s.target_type, s.target_id, s.source_type, s.source_id, s.full_path, s.depth,
    ns.user_id, ns.level, ns.notification_email${extra}`;
  const only = users ? sql`and ns.user_id in (${users})` : sql``;
  return sql`
    ${select} from sources s join notification_settings ns on ns.group_id = s.source_id
     where s.source_type = 'group' ${only}
    union all
    ${select} from sources s join notification_settings ns on ns.project_id = s.source_id
     where s.source_type = 'project' ${only}`;
}

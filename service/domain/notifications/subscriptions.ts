// The notification subscriptions: for every project and group, the users who hold a setting there
// (levels.ts's holdsSql: the watchers and custom holders, at the target or any ancestor) with their
// effective settings there (effective.ts). The recipients statement reads a target's list instead
// of finding its holders and their settings among the members of the tree, so a resolution costs
// what its candidates cost (issue 21).
//
// The list is kept true by the database, in the transaction of every write that changes it
// (migration 0030's triggers on notification_settings, members, groups and projects), so no write
// path can forget it. The rule itself is not written there: the function the triggers call,
// notification_subscriptions_refresh, and notification_subscription_rows have the bodies
// `subscriptionFunctionBodies()` generates from the fragments below, and
// assertSubscriptionRulesCurrent holds the installed functions to that text. Change a rule here, and
// a migration must install the new bodies (and rebuild the list: notification_subscriptions_rebuild()).
import {
  DummyDriver,
  Kysely,
  PostgresAdapter,
  PostgresIntrospector,
  PostgresQueryCompiler,
  type RawBuilder,
  sql,
} from 'kysely';
import { type DbOrTrx, NOTIFICATION_EVENTS } from '../../db/schema';
import { decisiveSql, effectiveCtes, effectiveLevelColumnsSql } from './effective';
import { FLAG_BITS, HOLDER_LEVELS, holdsSql, INHERIT } from './levels';
import { sourcesCte } from './sources';
import { memberAtSourcesSql } from '../visibility';

/**
 * After `sources` (any number of targets): `holders(target_type, target_id, user_id, source_type,
 * source_id, full_path, depth, level_there, global_level)`, one row per target and source where a
 * user holds a setting (levels.ts's holdsSql), for the users of `users` (a query of ids) or every
 * user. Found from the settings side: the rows at the sources whose level may hold (index on source
 * and level), and the users whose global level holds (index on the global level) with a membership
 * but no row at a source.
 */
export const holdersCte = (users?: RawBuilder<unknown>): RawBuilder<unknown> => {
  const only = (column: RawBuilder<unknown>) => (users ? sql`and ${column} in (${users})` : sql``);
  return sql`
  global_holders as (
    select user_id, level from notification_settings
     where group_id is null and project_id is null and level = any(${HOLDER_LEVELS}::text[]) ${only(sql`user_id`)}
  ),
  rows_there as (
    select s.target_type, s.target_id, ns.user_id, s.source_type, s.source_id, s.full_path, s.depth, ns.level
      from sources s join notification_settings ns on ns.group_id = s.source_id
     where s.source_type = 'group' and ns.level = any(${[...HOLDER_LEVELS, INHERIT]}::text[]) ${only(sql`ns.user_id`)}
    union all
    select s.target_type, s.target_id, ns.user_id, s.source_type, s.source_id, s.full_path, s.depth, ns.level
      from sources s join notification_settings ns on ns.project_id = s.source_id
     where s.source_type = 'project' and ns.level = any(${[...HOLDER_LEVELS, INHERIT]}::text[]) ${only(sql`ns.user_id`)}
  ),
  holders as (
    select r.target_type, r.target_id, r.user_id, r.source_type, r.source_id, r.full_path, r.depth,
           r.level as level_there, gh.level as global_level
      from rows_there r left join global_holders gh on gh.user_id = r.user_id
     where ${holdsSql(sql`r.level`, sql`gh.level`)}
    union all
    -- From each global holder to their memberships at the sources (LATERAL: an index probe per
    -- holder, never a scan of the tree's members), where they have no row.
    select s.target_type, s.target_id, gh.user_id, s.source_type, s.source_id, s.full_path, s.depth, null, gh.level
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
};

/**
 * The subscription rows of the targets of `sources`, for the users of `users` or every user:
 * (target_type, target_id, user_id, level, source_type, source_id, flags, group_email,
 * global_email, member) — the effective level and its source, the custom flags of the setting
 * that gave it (levels.ts's FLAG_BITS), the group and global notification e-mails (the address is
 * completed with the primary e-mail when read, address.ts), and whether the user is a member at the
 * target or above it (visibility.ts; the target's own visibility and the user's admin flag are
 * read when resolving).
 */
function subscriptionRowsSql(users?: RawBuilder<unknown>): RawBuilder<unknown> {
  const flags = NOTIFICATION_EVENTS.map((e) => sql`${sql.ref(`ns.${e}`)} as ${sql.ref(e)}`);
  const bits = NOTIFICATION_EVENTS.map(
    (e) => sql`case when ${decisiveSql(sql.ref(`n.${e}`), sql.ref(`g.${e}`))} then ${FLAG_BITS[e]} else 0 end`,
  );
  return sql`
  ${holdersCte(users)},
  ${effectiveCtes(sql`select user_id from holders`, flags, NOTIFICATION_EVENTS)},
  held as (select distinct target_type, target_id, user_id from holders)
  select h.target_type, h.target_id, h.user_id, ${effectiveLevelColumnsSql},
         (${sql.join(bits, sql` + `)})::integer as flags, n.group_email, g.notification_email as global_email,
         ${memberAtSourcesSql(sql`h.user_id`, sql`h.target_type`, sql`h.target_id`)} as member
    from held h
    left join nearest n on n.user_id = h.user_id and n.target_type = h.target_type and n.target_id = h.target_id
    left join notification_settings g on g.user_id = h.user_id and g.group_id is null and g.project_id is null`;
}

/** The rows for the groups and projects of the arrays named `groups` and `projects`, for `users`. */
const rowsSql = (groups: string, projects: string, users?: RawBuilder<unknown>) => sql`
  with recursive ${sourcesCte({ groups: sql`select unnest(${sql.raw(groups)})`, projects: sql`select unnest(${sql.raw(projects)})` })},
  ${subscriptionRowsSql(users)}`;

const COLUMNS = sql`user_id, group_id, project_id, level, source_type, source_id, flags, group_email, global_email, member`;

/** Replace the rows of `users` (or every user's) on the targets t_groups/t_projects with the rule's. */
const replaceSql = (users?: RawBuilder<unknown>) => sql`
    delete from notification_subscriptions s
     where ${users ? sql`s.user_id in (${users}) and ` : sql``}(s.group_id = any(t_groups) or s.project_id = any(t_projects));
    insert into notification_subscriptions (${COLUMNS})
    select r.user_id, case when r.target_type = 'group' then r.target_id end,
           case when r.target_type = 'project' then r.target_id end,
           r.level, r.source_type, r.source_id, r.flags, r.group_email, r.global_email, r.member
      from (${rowsSql('t_groups', 't_projects', users)}) r;`;

/**
 * notification_subscriptions_refresh(p_users, p_groups, p_projects) (plpgsql): recompute the rows of
 * the users `p_users` (null: every user) on the groups and projects given and everything below
 * them. Concurrent refreshes of one user, or any refresh of every user (or of more than 64 at
 * once), wait for each other (advisory locks 2103 and 2104), so each reads what the other
 * committed. The statements carry the rule inline, so PostgreSQL plans them once per connection.
 */
const refreshSql = sql`
  declare
    t_groups bigint[];
    t_projects bigint[];
    v_user bigint;
  begin
    if p_users is null or cardinality(p_users) > 64 then
      perform pg_advisory_xact_lock(2103, 0);
    else
      perform pg_advisory_xact_lock_shared(2103, 0);
      for v_user in select distinct x from unnest(p_users) x order by 1 loop
        perform pg_advisory_xact_lock(2104, (v_user % 2147483648)::integer);
      end loop;
    end if;
    with recursive below (id) as (
      select g.id from groups g where g.id = any(p_groups)
      union
      select g.id from groups g join below b on g.parent_id = b.id
    )
    select coalesce(array_agg(id), '{}') into t_groups from below;
    select coalesce(array_agg(id), '{}') into t_projects from projects where id = any(p_projects) or group_id = any(t_groups);
    if cardinality(t_groups) = 0 and cardinality(t_projects) = 0 then
      return;
    end if;
    if p_users is null then
      ${replaceSql()}
    else
      ${replaceSql(sql`select unnest(p_users)`)}
    end if;
  end`;

const compiler = new Kysely<unknown>({
  dialect: {
    createAdapter: () => new PostgresAdapter(),
    createDriver: () => new DummyDriver(),
    createIntrospector: (db) => new PostgresIntrospector(db),
    createQueryCompiler: () => new PostgresQueryCompiler(),
  },
});

/** A constant as an SQL literal (the generated bodies take no parameters but their own). */
function literal(value: unknown): string {
  if (typeof value === 'number' && Number.isSafeInteger(value)) return String(value);
  if (typeof value === 'string') return `'${value.replaceAll("'", "''")}'`;
  if (Array.isArray(value)) return `array[${value.map(literal).join(', ')}]`;
  throw new Error(`subscriptions: no literal for ${JSON.stringify(value)}`);
}

/** SQL text with every parameter written as a literal, and no trailing blanks. */
function inline(query: RawBuilder<unknown>): string {
  const { sql: text, parameters } = query.compile(compiler);
  return text
    .replace(/\$(\d+)/g, (_, n: string) => literal(parameters[Number(n) - 1]))
    .split('\n')
    .map((line) => line.trimEnd())
    .join('\n');
}

/**
 * The generated function bodies, by name: notification_subscriptions_refresh (above; the triggers
 * call it) and notification_subscription_rows(p_groups, p_projects) (language sql: the rows of
 * those targets for every user, computed from scratch). Migration 0030 installs them;
 * assertSubscriptionRulesCurrent compares the installed bodies with these.
 */
const subscriptionFunctionBodies = (): Record<string, string> => ({
  notification_subscription_rows: inline(rowsSql('p_groups', 'p_projects')),
  notification_subscriptions_refresh: inline(refreshSql),
});

/**
 * Refuse a database whose subscription functions are not the rule this code generates: a rule
 * changed without the migration that installs it would resolve recipients from a list kept by the
 * old rule. Called after migrating (`npm start`, the deploy's migrate function).
 */
export async function assertSubscriptionRulesCurrent(db: DbOrTrx): Promise<void> {
  const bodies = subscriptionFunctionBodies();
  const { rows } = await sql<{ proname: string; prosrc: string }>`
    select proname, prosrc from pg_proc where proname = any(${Object.keys(bodies)}::text[])`.execute(db);
  const stale = Object.keys(bodies).filter((name) => rows.find((r) => r.proname === name)?.prosrc !== bodies[name]);
  if (stale.length)
    throw new Error(
      `the database's ${stale.join(' and ')} are not this version's notification rules: a migration must install them (ARCHITECTURE.md, "One rule, one home")`,
    );
}

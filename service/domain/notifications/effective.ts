// A user's effective settings on a target, in SQL, for any number of users and targets at once:
// the level (levels.ts's effectiveLevelSql), where it comes from, the address (address.ts) and the
// flags of the setting that gave the level — read along the ancestor walk of sources.ts. The
// recipients statement (for its candidates), the effective-settings answer (one user) and the
// account page (one user, every listed target) all use these CTEs and columns.
import { type RawBuilder, sql } from 'kysely';
import {
  type DbOrTrx,
  NOTIFICATION_EVENTS,
  type NotificationEvent,
  type NotificationLevel,
  type User,
} from '../../db/schema';
import { addressSql } from './address';
import { effectiveLevelSql, INHERIT, NOTIFICATION_LEVELS } from './levels';
import { type SourceType, settingsAtSourcesSql, sourcesCte } from './sources';

/** Where an effective setting comes from. */
export interface SettingSource {
  type: SourceType | 'global';
  id: number | null;
  full_path: string | null;
}

/** The group or project a setting is asked about. */
type TargetRef = { kind: 'project'; project: { id: number } } | { kind: 'group'; group: { id: number } };

/** `sources` for one target. */
export const targetSourcesCte = (target: TargetRef): RawBuilder<unknown> =>
  target.kind === 'project'
    ? sourcesCte({ projects: sql`select ${target.project.id}::bigint` })
    : sourcesCte({ groups: sql`select ${target.group.id}::bigint` });

/**
 * After `sources`: `at_sources` (the rows at every source of the users of `users`, or of every user
 * without it, with `columns`) and `nearest`, one row per target and user: the nearest row whose level
 * is not `global` — its `level`, `source_type`, `source_id`, `full_path` and the `flags` named — and
 * `group_email`, the nearest group row's notification e-mail.
 *
 * One hash aggregate with plain `min`s, no per-user arrays and no sort, so a resolution over thousands
 * of candidates stays one cheap pass over the rows at the sources: the nearest row is the least key
 * depth·2⁴⁰ + level·2³⁶ + its flags as bits (depth < 100, six levels, at most 32 flags), decoded after
 * (its source found again in `sources` by depth); the e-mail the least of depth (3 digits) ‖ e-mail.
 */
export const effectiveCtes = (
  users: RawBuilder<unknown> | undefined,
  columns: RawBuilder<unknown>[] = [],
  flags: readonly string[] = [],
): RawBuilder<unknown> => {
  if (flags.length > 32) throw new Error('effectiveCtes: at most 32 flags');
  const levels = sql`${NOTIFICATION_LEVELS}::text[]`;
  const bits = flags.map((f, i) => sql`case when ${sql.ref(f)} then ${2 ** i}::bigint else 0 end`);
  const key = sql`(depth::bigint << 40) + ((array_position(${levels}, level)::bigint - 1) << 36)${sql.join(
    bits.map((b) => sql` + ${b}`),
    sql``,
  )}`;
  const decoded = flags.map((f, i) => sql`((a.k >> ${i}) & 1) = 1 as ${sql.ref(f)}`);
  return sql`
  at_sources as (${settingsAtSourcesSql(users, columns)}),
  nearest as (
    select a.target_type, a.target_id, a.user_id, (${levels})[((a.k >> 36) & 15) + 1] as level,
           s.source_type, s.source_id, s.full_path, substr(a.e, 4) as group_email${sql.join(
             decoded.map((d) => sql`, ${d}`),
             sql``,
           )}
      from (
        select target_type, target_id, user_id, min(${key}) filter (where level <> ${INHERIT}) as k,
               min(lpad(depth::text, 3, '0') || notification_email)
                 filter (where source_type = 'group' and notification_email is not null) as e
          from at_sources group by target_type, target_id, user_id
      ) a
      left join sources s on s.target_type = a.target_type and s.target_id = a.target_id and s.depth = (a.k >> 40)
  )`;
};

/**
 * The joins the effective columns read, for users `u` on targets `t` (each with target_type and
 * target_id): `n` nearest, `g` the global row.
 */
export const effectiveJoins = sql`
  left join nearest n on n.user_id = u.id and n.target_type = t.target_type and n.target_id = t.target_id
  left join notification_settings g on g.user_id = u.id and g.group_id is null and g.project_id is null`;

/**
 * A flag of the setting that gave the level: `nearest` (over `n`) when a nearest row decided, else
 * `global` (over `g`) when the global row has a level of its own, else false.
 */
export const decisiveSql = (nearest: RawBuilder<unknown>, global: RawBuilder<unknown>): RawBuilder<boolean> =>
  sql<boolean>`coalesce(case when n.level is not null then ${nearest} when g.level <> ${INHERIT} then ${global} end, false)`;

/** level, source_type, source_id: the effective level from `n` and `g`, and where it comes from. */
export const effectiveLevelColumnsSql = sql`
  ${effectiveLevelSql(sql`n.level`, sql`g.level`)} as level,
  case when n.level is null then 'global' else n.source_type end as source_type,
  n.source_id`;

/** level, source_type, source_id, full_path, email: the effective settings of `u` from `n` and `g`. */
export const effectiveColumns = sql`
  ${effectiveLevelColumnsSql}, n.full_path,
  ${addressSql({ group: sql`n.group_email`, global: sql`g.notification_email`, primary: sql`u.email` })} as email`;

export interface EffectiveRow {
  level: NotificationLevel;
  source_type: SettingSource['type'];
  source_id: string | number | null;
  full_path: string | null;
  email: string;
}

export const sourceOf = (r: Pick<EffectiveRow, 'source_type' | 'source_id' | 'full_path'>): SettingSource => ({
  type: r.source_type,
  id: r.source_id === null ? null : Number(r.source_id),
  full_path: r.full_path,
});

/** The effective notification settings of one user on a project or group. */
interface EffectiveSettings {
  level: NotificationLevel;
  source: SettingSource;
  notification_email: string;
  /** The flags of the setting that gave the level (all false for the default). */
  events: Record<NotificationEvent, boolean>;
}

/** The user's effective settings on the target: one statement over the target and its ancestors. */
export async function effectiveSettings(
  db: DbOrTrx,
  user: Pick<User, 'id'>,
  target: TargetRef,
): Promise<EffectiveSettings> {
  const flags = NOTIFICATION_EVENTS.map((e) => sql.ref(`ns.${e}`));
  const { rows } = await sql<EffectiveRow & Record<NotificationEvent, boolean>>`
    with recursive ${targetSourcesCte(target)}, ${effectiveCtes(sql`select ${user.id}::bigint`, flags, NOTIFICATION_EVENTS)}
    select ${effectiveColumns}, ${sql.join(NOTIFICATION_EVENTS.map((e) => sql`${decisiveSql(sql.ref(`n.${e}`), sql.ref(`g.${e}`))} as ${sql.ref(e)}`))}
      from sources t cross join users u ${effectiveJoins}
     where t.depth = 0 and u.id = ${user.id}
  `.execute(db);
  const row = rows[0];
  if (!row) throw new Error('effectiveSettings: no such user or target');
  return {
    level: row.level,
    source: sourceOf(row),
    notification_email: row.email,
    events: Object.fromEntries(NOTIFICATION_EVENTS.map((e) => [e, row[e] === true])) as Record<
      NotificationEvent,
      boolean
    >,
  };
}

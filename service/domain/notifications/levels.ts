// The notification levels and what each lets through (GitLab's NotificationRecipient
// #suitable_notification_level? and NotificationSetting::EXCLUDED_WATCHER_EVENTS), written once as
// data: LEVEL_RULES. The TypeScript predicate (levelAllows, which `notify explain` narrates) and the
// SQL condition (levelAllowsSql, which the recipients statement filters with) are both generated
// from it, so the two forms cannot drift. Also here: the effective-level rule and who holds a
// setting (the watchers and custom holders), each as the one SQL fragment every statement uses.
import { type RawBuilder, sql } from 'kysely';
import { NOTIFICATION_EVENTS, type NotificationEvent, type NotificationLevel } from '../../db/schema';

export const NOTIFICATION_LEVELS: readonly NotificationLevel[] = [
  'disabled',
  'participating',
  'watch',
  'global',
  'mention',
  'custom',
];

/** Candidate kinds, as GitLab's recipient types; the order is the reason priority (first wins). */
export const CANDIDATE_KINDS = ['mention', 'participating', 'watch'] as const;
export type CandidateKind = (typeof CANDIDATE_KINDS)[number];

/** Why a recipient is notified, highest priority first. */
export type RecipientReason = 'mentioned' | 'participating' | 'watching' | 'custom';

/** One cell of the rule: always, never, the custom flag of the event, or only/except some events. */
type Rule =
  | 'always'
  | 'never'
  | 'flag'
  | { only: readonly NotificationEvent[] }
  | { except: readonly NotificationEvent[] };

/**
 * Level × candidate kind. A participant or mentioned watcher is notified even of the events
 * excluded for watchers (GitLab excludes them for both; the exclusion is meant for watching, not
 * for taking part). `participating` users also get pipeline and project-move mails without taking
 * part. A `global` level never decides (it defers: see effectiveLevelSql).
 */
const LEVEL_RULES: Record<NotificationLevel, Record<CandidateKind, Rule>> = {
  disabled: { mention: 'never', participating: 'never', watch: 'never' },
  mention: { mention: 'always', participating: 'never', watch: 'never' },
  participating: {
    mention: 'always',
    participating: 'always',
    watch: { only: ['failed_pipeline', 'fixed_pipeline', 'moved_project'] },
  },
  custom: { mention: 'always', participating: 'always', watch: 'flag' },
  watch: {
    mention: 'always',
    participating: 'always',
    watch: { except: ['push_to_merge_request', 'issue_due', 'success_pipeline'] },
  },
  global: { mention: 'never', participating: 'never', watch: 'never' },
};

/** The custom flags that turn an event on: fixed_pipeline also fires for success_pipeline (GitLab's pipeline mails). */
const FLAGS_OF: Partial<Record<NotificationEvent, readonly NotificationEvent[]>> = {
  fixed_pipeline: ['fixed_pipeline', 'success_pipeline'],
};
const flagsOf = (event: NotificationEvent): readonly NotificationEvent[] => FLAGS_OF[event] ?? [event];

/** The cell for one event: true, false, or 'flag' (the setting's custom flag decides). */
function verdict(level: NotificationLevel, kind: CandidateKind, event: NotificationEvent): boolean | 'flag' {
  const rule = LEVEL_RULES[level][kind];
  if (rule === 'always' || rule === 'never') return rule === 'always';
  if (rule === 'flag') return 'flag';
  return 'only' in rule ? rule.only.includes(event) : !rule.except.includes(event);
}

/** Whether the custom flags of a setting turn `event` on. */
export const flagOn = (events: Record<NotificationEvent, boolean>, event: NotificationEvent): boolean =>
  flagsOf(event).some((e) => events[e]);

/** The rule in TypeScript: does `level` let a `kind` candidate through for `event`? */
export function levelAllows(
  level: NotificationLevel,
  kind: CandidateKind,
  event: NotificationEvent,
  flag: boolean,
): boolean {
  const v = verdict(level, kind, event);
  return v === 'flag' ? flag : v;
}

/** Each custom flag's bit when a setting's flags travel packed in one integer (the subscriptions list). */
export const FLAG_BITS = Object.fromEntries(NOTIFICATION_EVENTS.map((e, i) => [e, 2 ** i])) as Record<
  NotificationEvent,
  number
>;

/** Whether the packed `flags` (FLAG_BITS) turn `event` on. */
export const packedFlagSql = (flags: RawBuilder<unknown>, event: NotificationEvent): RawBuilder<boolean> =>
  sql<boolean>`(${flags} & ${flagsOf(event).reduce((mask, e) => mask | FLAG_BITS[e], 0)}) <> 0`;

/** The custom flag of `event` on the settings row `alias` (a boolean expression). */
export const flagSql = (alias: string, event: NotificationEvent): RawBuilder<boolean> =>
  sql<boolean>`(${sql.join(
    flagsOf(event).map((e) => sql.ref(`${alias}.${e}`)),
    sql` or `,
  )})`;

/**
 * The rule in SQL for one event and one candidate kind: true when the `level` × `kind` cell lets the
 * candidate through (`flag`: the custom flag of the setting that gave the level). The levels that
 * pass, and those that pass on the flag, travel as parameters; no string is built per row.
 */
export function levelAllowsSql(
  level: RawBuilder<unknown>,
  kind: CandidateKind,
  flag: RawBuilder<unknown>,
  event: NotificationEvent,
): RawBuilder<boolean> {
  const pass = NOTIFICATION_LEVELS.filter((l) => verdict(l, kind, event) === true);
  const withFlag = NOTIFICATION_LEVELS.filter((l) => verdict(l, kind, event) === 'flag');
  return sql<boolean>`(${level} = any(${pass}::text[]) or (${level} = any(${withFlag}::text[]) and ${flag}))`;
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

/** Levels whose holders are candidates for every event at that source (GitLab's watchers and custom holders). */
export const HOLDER_LEVELS: readonly NotificationLevel[] = ['watch', 'custom'];

/**
 * Who holds a setting at a source (Base#source_or_global_setting_by_level_query): their level there
 * is watch/custom, or it is `global` — a membership without a row counts as `global`, since GitLab
 * creates that row for every member — while their global level is watch/custom. `levelThere` is
 * null for a membership without a row; `globalLevel` null when there is no global row.
 */
export const holdsSql = (levelThere: RawBuilder<unknown>, globalLevel: RawBuilder<unknown>): RawBuilder<boolean> =>
  sql<boolean>`(${levelThere} = any(${HOLDER_LEVELS}::text[])
    or (coalesce(${levelThere}, 'global') = 'global' and ${globalLevel} = any(${HOLDER_LEVELS}::text[])))`;

/** A group's or project's own level when it has none, and the global level when the user set none. */
export const INHERIT: NotificationLevel = 'global';
export const DEFAULT_LEVEL: NotificationLevel = 'participating';

/**
 * The effective level (gitlab#222840): the nearest level along the chain (project, its group, that
 * group's parent, …) that is not `global`, else the user's global level, else participating (a
 * global row saying `global` also means participating). `nearest` is that nearest level (null when
 * every link says global), `globalLevel` the global row's (null without one).
 */
export const effectiveLevelSql = (
  nearest: RawBuilder<unknown>,
  globalLevel: RawBuilder<unknown>,
): RawBuilder<NotificationLevel> =>
  sql<NotificationLevel>`coalesce(${nearest}, nullif(${globalLevel}, ${INHERIT}), ${DEFAULT_LEVEL})`;

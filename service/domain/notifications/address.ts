// The notification address, once: the nearest group-level notification e-mail up the tree (a
// group's e-mail is inherited by its subgroups and projects; GitLab ignores those below the top,
// gitlab#367418), else the global notification e-mail, else the primary e-mail. The order is the
// data; the TypeScript and SQL forms both read it.
import { type RawBuilder, sql } from 'kysely';

const ADDRESS_ORDER = ['group', 'global', 'primary'] as const;
type Addresses<T> = { [K in (typeof ADDRESS_ORDER)[number]]: T };

/** The address in SQL: each argument an expression (null when absent). */
export const addressSql = (a: Addresses<RawBuilder<unknown>>): RawBuilder<string> =>
  sql<string>`coalesce(${sql.join(ADDRESS_ORDER.map((k) => a[k]))})`;

/** The address in TypeScript, for a settings view read without SQL of its own (GET /notification_settings). */
export const addressOf = (a: Addresses<string | null | undefined> & { primary: string }): string =>
  ADDRESS_ORDER.map((k) => a[k]).find((v): v is string => v !== null && v !== undefined) ?? a.primary;

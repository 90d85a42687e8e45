// The user directory of /api/v4/users (GitLab's UsersFinder): one page of users matching GitLab's
// filters, one user by id, and the highest role a user holds. Rows carry the API's user columns
// (never a credential) and two_factor_enabled.
import { sql } from 'kysely';
import type { DbOrTrx, User } from '../db/schema';
import { windowPage } from './page';
import { PUBLIC_USER_COLUMNS, twoFactorEnabledSql } from './users';

export type DirectoryUser = Pick<User, (typeof PUBLIC_USER_COLUMNS)[number]> & { two_factor_enabled: boolean };

export const USER_ORDERS = ['id', 'name', 'username', 'created_at', 'updated_at'] as const;
export type UserOrder = (typeof USER_ORDERS)[number];

export interface UserFilter {
  /** Exact, case-insensitive. */
  username?: string;
  /** Name or username containing it; an e-mail address matched exactly (see `searchPrivateEmails`). */
  search?: string;
  /** Administrators search every address of a user (primary and secondary); others only public e-mails. */
  searchPrivateEmails: boolean;
  /** GitLab's without_forbidden_states: only administrators list blocked users. */
  hideBlocked: boolean;
  active?: boolean;
  blocked?: boolean;
  external?: boolean;
  admins?: boolean;
  createdAfter?: Date;
  createdBefore?: Date;
  orderBy: UserOrder;
  sort: 'asc' | 'desc';
  limit: number;
  offset: number;
}

const columns = [
  ...PUBLIC_USER_COLUMNS.map((c) => `u.${c}` as const),
  twoFactorEnabledSql('u').as('two_factor_enabled'),
] as const;

/** `%term%` for ILIKE, with the term's own wildcards escaped. */
const likePattern = (term: string) => `%${term.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;

export async function listDirectoryUsers(
  db: DbOrTrx,
  filter: UserFilter,
): Promise<{ total: number; rows: DirectoryUser[] }> {
  let q = db.selectFrom('users as u');
  if (filter.hideBlocked) q = q.where('u.state', '<>', 'blocked');
  if (filter.username !== undefined)
    q = q.where((eb) => eb(eb.fn('lower', ['u.username']), '=', (filter.username as string).toLowerCase()));
  if (filter.search) {
    const term = filter.search;
    const lower = term.toLowerCase();
    q = q.where((eb) =>
      eb.or([
        eb('u.name', 'ilike', likePattern(term)),
        eb('u.username', 'ilike', likePattern(term)),
        eb(eb.fn('lower', ['u.public_email']), '=', lower),
        ...(filter.searchPrivateEmails
          ? [
              eb(eb.fn('lower', ['u.email']), '=', lower),
              eb.exists(
                eb
                  .selectFrom('user_emails as e')
                  .select('e.id')
                  .whereRef('e.user_id', '=', 'u.id')
                  .where((e) => e(e.fn('lower', ['e.email']), '=', lower)),
              ),
            ]
          : []),
      ]),
    );
  }
  if (filter.active) q = q.where('u.state', '=', 'active');
  if (filter.blocked) q = q.where('u.state', '=', 'blocked');
  if (filter.external) q = q.where('u.external', '=', true);
  if (filter.admins) q = q.where('u.is_admin', '=', true);
  if (filter.createdAfter) q = q.where('u.created_at', '>=', filter.createdAfter);
  if (filter.createdBefore) q = q.where('u.created_at', '<=', filter.createdBefore);
  const rows = await q
    .select([...columns, sql<string>`count(*) over ()`.as('total')])
    .orderBy(`u.${filter.orderBy}`, filter.sort)
    .orderBy('u.id', filter.sort)
    .limit(filter.limit)
    .offset(filter.offset)
    .execute();
  const page = await windowPage(
    rows,
    async () => (await q.select((eb) => eb.fn.countAll().as('n')).executeTakeFirstOrThrow()).n,
  );
  return { total: page.total, rows: page.rows as DirectoryUser[] };
}

/** One user with the API's columns, or undefined (ids beyond bigint name nobody). */
export const findDirectoryUser = async (db: DbOrTrx, id: number): Promise<DirectoryUser | undefined> =>
  Number.isSafeInteger(id) && id > 0
    ? ((await db.selectFrom('users as u').select(columns).where('u.id', '=', id).executeTakeFirst()) as
        | DirectoryUser
        | undefined)
    : undefined;

/** GitLab's highest_role: the highest access level of any membership (0 for none). */
export async function highestRole(db: DbOrTrx, userId: number): Promise<number> {
  const row = await db
    .selectFrom('members')
    .select((eb) => eb.fn.max('access_level').as('level'))
    .where('user_id', '=', userId)
    .executeTakeFirst();
  return Number(row?.level ?? 0);
}

// The user a `Sudo` identifier names (GitLab's API::Helpers#find_user): all digits is an id,
// anything else a username, matched case-insensitively. Only the columns the caller names are read
// (the users table holds credentials).
import type { DbOrTrx, UsersTable } from '../db/schema';
import { twoFactorEnabledSql } from './users';

/** Identifiers longer than this name nobody (usernames are at most 255 characters). */
const MAX_IDENTIFIER_LENGTH = 255;

export async function findUserByIdOrUsername<C extends keyof UsersTable>(
  db: DbOrTrx,
  identifier: string,
  columns: readonly C[],
) {
  if (!identifier || identifier.length > MAX_IDENTIFIER_LENGTH || identifier.includes('\u0000')) return undefined;
  const byId = /^\d{1,15}$/.test(identifier);
  return db
    .selectFrom('users')
    .select(columns)
    .select(twoFactorEnabledSql().as('two_factor_enabled'))
    .where((eb) =>
      byId ? eb('id', '=', Number(identifier)) : eb(eb.fn('lower', ['username']), '=', identifier.toLowerCase()),
    )
    .executeTakeFirst();
}

// First start on an empty database: create the `root` admin with a random password, once.
import { sql } from 'kysely';
import type { Db } from '../db/schema';
import { randomBytes } from 'node:crypto';
import { countUsers, createUser } from './users';

/** Returns the generated password when `root` was created now, else undefined. */
export async function ensureRootUser(db: Db): Promise<string | undefined> {
  return db.transaction().execute(async (trx) => {
    // Two processes starting at once on an empty database: only one creates root.
    await sql`select pg_advisory_xact_lock(hashtext('lanyard.bootstrap'))`.execute(trx);
    if ((await countUsers(trx)) > 0) return undefined;
    const password = randomBytes(18).toString('base64url');
    await createUser(trx, {
      username: 'root',
      email: 'root@localhost.localdomain',
      name: 'Administrator',
      password,
      isAdmin: true,
      actor: 'bootstrap',
    });
    return password;
  });
}

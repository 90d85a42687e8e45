// The app database role's credentials in their own Secrets Manager secret ({"username",
// "password"}, the shape of RDS's own secrets). The migration function — the only function that
// reads the master secret — generates them on the first deploy and rotates them on request; the
// API and admin functions read only this secret (and re-fetch it once when PostgreSQL says 28P01).
import { randomBytes, randomUUID } from 'node:crypto';
import { APP_ROLE, ensureAppRole, setAppRolePassword } from '../db/app-role';
import type { Db } from '../db/schema';
import { parseDatabaseCredentials } from './database';
import type { SecretStore } from './secret-store';

/** 256 random bits, URL-safe (no quoting issues in any client configuration). */
const newPassword = () => randomBytes(32).toString('base64url');

/**
 * After migrations: create the secret's value if the deploy just created the secret, then create
 * or update the role to match it and re-apply its grants (new tables included).
 */
export async function ensureAppDbCredentials(
  db: Db,
  store: SecretStore,
  arn: string,
): Promise<{ secret: 'created' | 'present'; role: 'created' | 'updated' }> {
  const current = await store.get(arn);
  if (current !== undefined) {
    const { username, password } = parseDatabaseCredentials(current, arn);
    return { secret: 'present', role: await ensureAppRole(db, username, password) };
  }
  const password = newPassword();
  // The role first: a secret naming a password the database does not know would lock the app out.
  const role = await ensureAppRole(db, APP_ROLE, password);
  await store.put(arn, JSON.stringify({ username: APP_ROLE, password }), randomUUID());
  return { secret: 'created', role };
}

/**
 * A new password for the app role. The role changes inside a transaction that commits only after
 * the secret is stored, so a failed put leaves the old password working; between the commit and
 * the next connection, functions holding the old value re-fetch the secret once on 28P01.
 * Open connections are not affected (PostgreSQL checks a password at connect only).
 */
export async function rotateAppDbPassword(db: Db, store: SecretStore, arn: string): Promise<{ rotated: true }> {
  const current = await store.get(arn);
  const username = current === undefined ? APP_ROLE : parseDatabaseCredentials(current, arn).username;
  const password = newPassword();
  await db.transaction().execute(async (trx) => {
    await setAppRolePassword(trx, username, password);
    await store.put(arn, JSON.stringify({ username, password }), randomUUID());
  });
  return { rotated: true };
}

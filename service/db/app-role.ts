// The application's own PostgreSQL role (lanyard_app): it may read and write rows in Lanyard's
// tables and nothing else — no DDL (no CREATE on the schema, owns no table, so cannot DROP or
// ALTER), not a superuser, cannot create roles or databases, the migrator's tables read-only.
// Created and re-granted by the migration function (as the master user) after every migration;
// default privileges make tables created by later migrations usable at once.
import { createHash, createHmac, pbkdf2Sync, randomBytes } from 'node:crypto';
import { sql } from 'kysely';
import type { Db, DbOrTrx } from './schema';

export const APP_ROLE = 'lanyard_app';

/**
 * Kysely's bookkeeping: read-only for the application, so `lanyard-admin db status` (and a
 * `db migrate` with nothing pending) answer through the admin function; applying a migration
 * needs the owner, which is the deploy's migration function's job.
 */
const MIGRATOR_TABLES = ['kysely_migration', 'kysely_migration_lock'];

const ROLE_NAME = /^[a-z_][a-z0-9_]{0,62}$/;

/**
 * The SCRAM-SHA-256 verifier PostgreSQL stores for a password (RFC 5802/7677, as libpq's
 * PQencryptPasswordConn makes it). Sending the verifier instead of the password keeps the
 * password out of the server's statement logs and pg_stat_statements.
 */
export function scramSha256Verifier(password: string, salt = randomBytes(16), iterations = 4096): string {
  const salted = pbkdf2Sync(password.normalize('NFKC'), salt, iterations, 32, 'sha256');
  const clientKey = createHmac('sha256', salted).update('Client Key').digest();
  const storedKey = createHash('sha256').update(clientKey).digest();
  const serverKey = createHmac('sha256', salted).update('Server Key').digest();
  return `SCRAM-SHA-256$${iterations}:${salt.toString('base64')}$${storedKey.toString('base64')}:${serverKey.toString('base64')}`;
}

/**
 * On RDS the master user is not a superuser: it may create a role without SUPERUSER, REPLICATION
 * and BYPASSRLS (their defaults), but may not name those attributes in ALTER ROLE at all, not even
 * to turn them off. So they are left to their defaults and checked afterwards instead.
 */
const ROLE_OPTIONS = 'LOGIN NOCREATEDB NOCREATEROLE NOINHERIT';

/** Create the role if missing, or reset its attributes and password (the verifier only) if present. */
export async function setAppRolePassword(db: DbOrTrx, role: string, password: string): Promise<'created' | 'updated'> {
  if (!ROLE_NAME.test(role)) throw new Error(`invalid role name ${JSON.stringify(role)}`);
  // A verifier holds only [A-Za-z0-9+/=:$-]: safe as a literal (DDL takes no bind parameters).
  const verifier = scramSha256Verifier(password);
  const exists = await sql<{ n: number }>`select count(*)::int as n from pg_roles where rolname = ${role}`.execute(db);
  const created = exists.rows[0].n === 0;
  await sql.raw(`${created ? 'CREATE' : 'ALTER'} ROLE ${role} WITH ${ROLE_OPTIONS} PASSWORD '${verifier}'`).execute(db);
  const { rows } = await sql<{ rolsuper: boolean; rolreplication: boolean; rolbypassrls: boolean }>`
    select rolsuper, rolreplication, rolbypassrls from pg_roles where rolname = ${role}
  `.execute(db);
  const excess = Object.entries(rows[0])
    .filter(([, on]) => on)
    .map(([attribute]) => attribute.replace(/^rol/, '').toUpperCase());
  // Someone raised it by hand: refuse (failing the deploy) rather than serve traffic through it.
  if (excess.length) throw new Error(`role ${role} has ${excess.join(', ')}: remove it (ALTER ROLE as a superuser)`);
  return created ? 'created' : 'updated';
}

/**
 * Grant the role exactly DML on the current tables of schema public (the migrator's: SELECT only),
 * USAGE on its sequences, and the same on whatever the current user (the migrating owner)
 * creates there later. Idempotent: run after every migration.
 */
export async function grantAppRole(db: DbOrTrx, role: string): Promise<void> {
  if (!ROLE_NAME.test(role)) throw new Error(`invalid role name ${JSON.stringify(role)}`);
  const database = (await sql<{ d: string }>`select current_database() as d`.execute(db)).rows[0].d;
  const statements = [
    `GRANT CONNECT ON DATABASE "${database.replace(/"/g, '""')}" TO ${role}`,
    // PostgreSQL 15+ already denies PUBLIC CREATE on public; said again for databases made earlier.
    'REVOKE CREATE ON SCHEMA public FROM PUBLIC',
    `REVOKE ALL ON SCHEMA public FROM ${role}`,
    `GRANT USAGE ON SCHEMA public TO ${role}`,
    `REVOKE ALL ON ALL TABLES IN SCHEMA public FROM ${role}`,
    `GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA public TO ${role}`,
    `REVOKE ALL ON ALL SEQUENCES IN SCHEMA public FROM ${role}`,
    `GRANT USAGE ON ALL SEQUENCES IN SCHEMA public TO ${role}`,
    `ALTER DEFAULT PRIVILEGES IN SCHEMA public GRANT SELECT, INSERT, UPDATE, DELETE ON TABLES TO ${role}`,
    `ALTER DEFAULT PRIVILEGES IN SCHEMA public GRANT USAGE ON SEQUENCES TO ${role}`,
  ];
  const migratorTables = await sql<{ t: string }>`
    select tablename as t from pg_tables where schemaname = 'public' and tablename = any(${MIGRATOR_TABLES})
  `.execute(db);
  for (const { t } of migratorTables.rows) {
    statements.push(`REVOKE ALL ON TABLE public.${t} FROM ${role}`, `GRANT SELECT ON TABLE public.${t} TO ${role}`);
  }
  for (const statement of statements) await sql.raw(statement).execute(db);
}

/** Both, in one transaction: the role is never left half-granted. */
export async function ensureAppRole(db: Db, role: string, password: string): Promise<'created' | 'updated'> {
  return db.transaction().execute(async (trx) => {
    const outcome = await setAppRolePassword(trx, role, password);
    await grantAppRole(trx, role);
    return outcome;
  });
}

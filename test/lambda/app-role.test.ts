// The migration function's app role on real PostgreSQL: the handler creates lanyard_app and its
// secret; connected as lanyard_app, DML works and DDL does not; grants follow new tables; the
// password rotates; and the app's own database layer connects with the app secret. As on RDS, the
// migrating "master" user is not a superuser (LOGIN CREATEROLE CREATEDB, owner of its database):
// what a superuser may do and RDS's master may not would pass here and fail on the first redeploy.
import { sql } from 'kysely';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { openLambdaDatabase } from '../../service/aws/database';
import { createMigrateHandler } from '../../service/aws/migrate-handler';
import type { SecretStore } from '../../service/aws/secret-store';
import { scramSha256Verifier } from '../../service/db/app-role';
import { createDb, type DbHandle } from '../../service/db/create-db';
import { loadConfig } from '../../service/config';

const APP_SECRET = 'arn:aws:secretsmanager:eu-west-1:123456789012:secret:lanyard-prod/app-db-AbCdEf';

const MASTER = `lanyard_master_${process.pid}`;
const DATABASE = `lanyard_approle_${process.pid}_${Date.now()}`;
/** Connected as the RDS-like master user, owner of DATABASE. */
let t: DbHandle & { url: string; name: string };
const secrets = new Map<string, string>();
const puts: string[] = [];
const store: SecretStore = {
  get: async (arn) => secrets.get(arn),
  put: async (arn, value) => {
    puts.push(arn);
    secrets.set(arn, value);
  },
};
const appCredentials = () => JSON.parse(secrets.get(APP_SECRET)!) as { username: string; password: string };

async function asApp(password = appCredentials().password) {
  const url = new URL(t.url);
  url.username = 'lanyard_app';
  url.password = password;
  const client = new pg.Client({ connectionString: url.toString() });
  await client.connect();
  return client;
}

async function admin(text: string) {
  const client = new pg.Client({ connectionString: inject('pgAdminUrl') });
  await client.connect();
  try {
    return await client.query(text);
  } finally {
    await client.end();
  }
}

const failure = (p: Promise<unknown>) =>
  p.then(
    () => 'succeeded',
    (e: { code?: string; message: string }) => `${e.code}: ${e.message}`,
  );

beforeAll(async () => {
  // Roles are cluster-wide: start from none (a previous run may have left them).
  await admin('drop role if exists lanyard_app').catch(() => undefined);
  await admin(`drop role if exists ${MASTER}`).catch(() => undefined);
  await admin(`create role ${MASTER} login createrole createdb password 'master-password'`);
  await admin(`create database ${DATABASE} owner ${MASTER}`);
  const url = new URL(inject('pgAdminUrl'));
  url.username = MASTER;
  url.password = 'master-password';
  url.pathname = `/${DATABASE}`;
  t = { ...createDb({ connectionString: url.toString(), max: 2 }), url: url.toString(), name: DATABASE };
});
afterAll(async () => {
  await t.destroy();
  await admin(`drop database if exists ${DATABASE} with (force)`);
  await admin('drop role if exists lanyard_app').catch(() => undefined);
  await admin(`drop role if exists ${MASTER}`).catch(() => undefined);
});

describe('scramSha256Verifier', () => {
  it("matches PostgreSQL's own encoding (RFC 7677 test password, fixed salt)", () => {
    // A known answer for RFC 7677's password and salt; that PostgreSQL accepts the verifiers we
    // make (random salts) at login is shown by every connection as lanyard_app below.
    const v = scramSha256Verifier('pencil', Buffer.from('W22ZaJ0SNY7soEsUEjb6gQ==', 'base64'), 4096);
    expect(v).toBe(
      'SCRAM-SHA-256$4096:W22ZaJ0SNY7soEsUEjb6gQ==$WG5d8oPm3OtcPnkdi4Uo7BkeZkBFzpcXkuLmtbsT4qY=:wfPLwcE6nTWhTAmQ7tl2KeoiWGPlZqQxSrmfPwDl2dU=',
    );
  });
});

describe('the migration handler and lanyard_app', () => {
  it('creates the role and its secret after migrating, and is idempotent', async () => {
    const handler = createMigrateHandler({ db: t.db, store, appDbSecretArn: APP_SECRET });
    const first = await handler({ action: 'migrate' });
    expect(first.pending).toEqual([]);
    expect(first.newlyApplied).toContain('0001-initial-schema');
    expect(first.appRole).toEqual({ secret: 'created', role: 'created' });
    const creds = appCredentials();
    expect(creds.username).toBe('lanyard_app');
    expect(creds.password).toMatch(/^[A-Za-z0-9_-]{43}$/);

    const role = await admin(
      `select rolsuper, rolcreatedb, rolcreaterole, rolreplication, rolbypassrls, rolcanlogin, rolinherit,
              rolpassword like 'SCRAM-SHA-256$4096:%' as scram
       from pg_authid where rolname = 'lanyard_app'`,
    );
    expect(role.rows).toEqual([
      {
        rolsuper: false,
        rolcreatedb: false,
        rolcreaterole: false,
        rolreplication: false,
        rolbypassrls: false,
        rolcanlogin: true,
        rolinherit: false,
        scram: true,
      },
    ]);
    expect(
      (
        await admin(
          `select count(*)::int as n from pg_auth_members m join pg_roles r on r.oid = m.member where r.rolname = 'lanyard_app'`,
        )
      ).rows,
    ).toEqual([{ n: 0 }]);

    expect(await handler({ action: 'migrate' })).toMatchObject({
      newlyApplied: [],
      appRole: { secret: 'present', role: 'updated' },
    });
    expect(appCredentials().password).toBe(creds.password);
    expect(puts).toEqual([APP_SECRET]); // stored once
  });

  it('can read and write rows as lanyard_app, but CREATE, DROP and ALTER fail', async () => {
    const app = await asApp();
    try {
      expect((await app.query('select current_user as u')).rows).toEqual([{ u: 'lanyard_app' }]);
      const inserted = await app.query(
        `insert into users (username, email, name, created_at, updated_at)
         values ('dml', 'dml@example.com', 'DML', now(), now()) returning id`,
      );
      const id = inserted.rows[0].id;
      expect(await failure(app.query(`update users set name = 'Changed' where id = $1`, [id]))).toBe('succeeded');
      expect((await app.query('select name from users where id = $1', [id])).rows).toEqual([{ name: 'Changed' }]);
      expect((await app.query('delete from users where id = $1', [id])).rowCount).toBe(1);

      expect(await failure(app.query('create table intruder (id int)'))).toBe(
        '42501: permission denied for schema public',
      );
      expect(await failure(app.query('drop table users'))).toBe('42501: must be owner of table users');
      expect(await failure(app.query('alter table users add column x int'))).toBe(
        '42501: must be owner of table users',
      );
      expect(await failure(app.query('truncate rate_limit_counters'))).toBe(
        '42501: permission denied for table rate_limit_counters',
      );
      expect(await failure(app.query('create index on users (name)'))).toBe('42501: must be owner of table users');
      expect(await failure(app.query('create role sneaky'))).toBe('42501: permission denied to create role');
      // The migrator's tables are read-only (db status through the admin function).
      expect(await failure(app.query('select name from kysely_migration'))).toBe('succeeded');
      expect(await failure(app.query(`insert into kysely_migration (name, timestamp) values ('x', 'y')`))).toBe(
        '42501: permission denied for table kysely_migration',
      );
      expect(await failure(app.query('delete from kysely_migration_lock'))).toBe(
        '42501: permission denied for table kysely_migration_lock',
      );
    } finally {
      await app.end();
    }
  });

  it('re-applies grants after each migration: a table a later migration creates is usable at once', async () => {
    // As a later migration would, run by the migrating (owner) user.
    await sql`create table later_feature (id int generated always as identity primary key, v text)`.execute(t.db);
    const app = await asApp();
    try {
      expect(await failure(app.query(`insert into later_feature (v) values ('x')`))).toBe('succeeded');
      expect((await app.query('select v from later_feature')).rows).toEqual([{ v: 'x' }]);
      expect(await failure(app.query('drop table later_feature'))).toBe('42501: must be owner of table later_feature');
    } finally {
      await app.end();
      await sql`drop table later_feature`.execute(t.db);
    }
  });

  it('rotates the password on request: the old one stops working, the new one is in the secret', async () => {
    const old = appCredentials().password;
    const handler = createMigrateHandler({ db: t.db, store, appDbSecretArn: APP_SECRET });
    expect(await handler({ action: 'rotate-db-password' })).toMatchObject({ appRole: { rotated: true } });
    const fresh = appCredentials().password;
    expect(fresh).not.toBe(old);
    expect(await failure(asApp(old).then((c) => c.end()))).toBe(
      '28P01: password authentication failed for user "lanyard_app"',
    );
    const app = await asApp(fresh);
    await app.end();
  });

  it('a rotation whose secret cannot be stored changes nothing: the old password keeps working', async () => {
    const current = appCredentials().password;
    const failingStore: SecretStore = {
      get: store.get,
      put: async () => {
        throw new Error('Secrets Manager: AccessDeniedException');
      },
    };
    const handler = createMigrateHandler({ db: t.db, store: failingStore, appDbSecretArn: APP_SECRET });
    await expect(handler({ action: 'rotate-db-password' })).rejects.toThrow('AccessDeniedException');
    expect(appCredentials().password).toBe(current);
    const app = await asApp(current);
    await app.end();
  });

  it('refuses (failing the deploy) when someone gave the role an attribute it must not have', async () => {
    await admin('alter role lanyard_app bypassrls');
    try {
      const handler = createMigrateHandler({ db: t.db, store, appDbSecretArn: APP_SECRET });
      await expect(handler({ action: 'migrate' })).rejects.toThrow(
        'role lanyard_app has BYPASSRLS: remove it (ALTER ROLE as a superuser)',
      );
    } finally {
      await admin('alter role lanyard_app nobypassrls');
    }
  });

  it("the functions' database layer connects as lanyard_app with the app secret", async () => {
    const u = new URL(t.url);
    const config = loadConfig({
      LOG_LEVEL: 'silent',
      DB_SECRET_ARN: APP_SECRET,
      DB_HOST: u.hostname,
      DB_PORT: u.port,
      DB_NAME: t.name,
      AWS_REGION: 'eu-west-1',
      AWS_ACCESS_KEY_ID: 'AKIDEXAMPLE',
      AWS_SECRET_ACCESS_KEY: 'x',
    });
    const database = openLambdaDatabase(config, { applicationName: 'lanyard-app-role-test', store, ssl: false });
    try {
      const { rows } = await sql<{ u: string }>`select current_user as u`.execute(database.db);
      expect(rows).toEqual([{ u: 'lanyard_app' }]);
      // `lanyard-admin db status` / `db migrate` through the admin function: nothing pending, so
      // nothing to apply, and both answer without owner rights.
      const { migrateToLatest, migrationStatus } = await import('../../service/db/migrator.js');
      const status = await migrationStatus(database.db);
      expect(status.pending).toEqual([]);
      expect(await migrateToLatest(database.db)).toEqual({ ...status, newlyApplied: [] });
      expect(await failure(sql`create table nope (id int)`.execute(database.db))).toBe(
        '42501: permission denied for schema public',
      );
    } finally {
      await database.destroy();
    }
  });
});

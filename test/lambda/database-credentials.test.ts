// service/aws/database.ts against real PostgreSQL: credentials from the secret, one connection,
// and a rotated password picked up by re-fetching once on 28P01 — never more than once.
import pg from 'pg';
import { sql } from 'kysely';
import { afterAll, describe, expect, inject, it, onTestFinished } from 'vitest';
import { openLambdaDatabase, parseDatabaseCredentials } from '../../service/aws/database';
import type { SecretStore } from '../../service/aws/secret-store';
import { loadConfig } from '../../service/config';
import { createTestDatabase } from '../support/db';

async function admin(text: string, params: unknown[] = []) {
  const client = new pg.Client({ connectionString: inject('pgAdminUrl') });
  await client.connect();
  try {
    return await client.query(text, params);
  } finally {
    await client.end();
  }
}

describe('openLambdaDatabase with DB_SECRET_ARN', () => {
  it('connects with the secret, survives a password rotation, and fails after one re-fetch when the secret is wrong', async () => {
    const t = await createTestDatabase();
    const role = `lanyard_rot_${process.pid}`;
    await admin(`drop role if exists ${role}`);
    await admin(`create role ${role} login password 'first-password'`);
    afterAll(() =>
      admin(`drop owned by ${role}`)
        .then(() => admin(`drop role if exists ${role}`))
        .catch(() => undefined),
    );

    const arn = 'arn:aws:secretsmanager:eu-west-1:123456789012:secret:rds!db-x';
    let secretValue = JSON.stringify({ username: role, password: 'first-password' });
    let gets = 0;
    const store: SecretStore = {
      get: async () => {
        gets++;
        return secretValue;
      },
      put: async () => undefined,
    };
    const u = new URL(t.url);
    const config = loadConfig({
      LOG_LEVEL: 'silent',
      DB_SECRET_ARN: arn,
      DB_HOST: u.hostname,
      DB_PORT: u.port,
      DB_NAME: t.name,
      AWS_REGION: 'eu-west-1',
      AWS_ACCESS_KEY_ID: 'AKIDEXAMPLE',
      AWS_SECRET_ACCESS_KEY: 'x',
    });
    const database = openLambdaDatabase(config, { applicationName: 'lanyard-rotation-test', store, ssl: false });
    onTestFinished(() => database.destroy());
    await database.credentialsReady;
    expect(gets).toBe(1);

    const whoami = async () => (await sql<{ u: string }>`select current_user as u`.execute(database.db)).rows[0].u;
    expect(await whoami()).toBe(role);
    expect(await whoami()).toBe(role);
    expect(gets).toBe(1); // cached
    const { rows } = await admin(
      `select count(*)::int as n from pg_stat_activity where application_name = 'lanyard-rotation-test'`,
    );
    expect(rows[0].n).toBe(1); // one connection per instance

    // RDS rotates the password: the open connection lives on; the next new one gets 28P01 once.
    await admin(`alter role ${role} password 'second-password'`);
    secretValue = JSON.stringify({ username: role, password: 'second-password' });
    expect(await whoami()).toBe(role);
    await admin(
      `select pg_terminate_backend(pid) from pg_stat_activity where application_name = 'lanyard-rotation-test'`,
    );
    await new Promise((r) => setTimeout(r, 100));
    expect(await whoami()).toBe(role);
    expect(gets).toBe(2);

    // A secret that is simply wrong: one re-fetch, then the authentication error surfaces.
    await admin(`alter role ${role} password 'third-password'`);
    await admin(
      `select pg_terminate_backend(pid) from pg_stat_activity where application_name = 'lanyard-rotation-test'`,
    );
    await new Promise((r) => setTimeout(r, 100));
    const err = await whoami().catch((e) => e);
    expect(err.code).toBe('28P01');
    expect(gets).toBe(3);
  });

  it('parses RDS-managed secrets and rejects malformed ones without echoing them', () => {
    expect(parseDatabaseCredentials('{"username":"postgres","password":"p"}', 'a')).toEqual({
      username: 'postgres',
      password: 'p',
    });
    expect(() => parseDatabaseCredentials('not json p4ss', 'a')).toThrow(/^secret a is not JSON$/);
    expect(() => parseDatabaseCredentials('{"password":"p"}', 'a')).toThrow('secret a lacks a username or password');
  });

  it('requires TLS verified against the bundled RDS CAs by default', async () => {
    const config = loadConfig({
      DB_SECRET_ARN: 'arn:x',
      DB_HOST: 'db.example',
      DB_CA_FILE: '/nonexistent/rds-ca.pem',
      AWS_REGION: 'eu-west-1',
      AWS_ACCESS_KEY_ID: 'a',
      AWS_SECRET_ACCESS_KEY: 'b',
    });
    const store: SecretStore = { get: async () => '{"username":"u","password":"p"}', put: async () => undefined };
    expect(() => openLambdaDatabase(config, { applicationName: 'x', store })).toThrow(
      'cannot read the database CA bundle /nonexistent/rds-ca.pem (ENOENT); set DB_CA_FILE',
    );
  });
});

// Attack (issue 22): "in local mode a database dump alone signs in as any two-factor user without a
// password" — the service keys lived in the database with what they protect. The attacker here
// holds a copy of every row of every table and tries each value that could be a key: to forge the
// pending-TOTP cookie (the step after a correct password) and to open a sealed TOTP seed. Both fail;
// the same forgery with the real key (from LANYARD_HOME, not the database) succeeds, so the attack
// itself is sound. Also: an installation from before migration 0012 has its keys moved out of the
// database at start-up without losing a session or an account, and 0012 refuses to drop keys.
import { createHash, createHmac, randomBytes } from 'node:crypto';
import { readFileSync, statSync } from 'node:fs';
import { sql } from 'kysely';
import { beforeEach, describe, expect, it } from 'vitest';
import { buildApp } from '../../service/app';
import { createMigrator, migrateToLatest, migrationStatus } from '../../service/db/migrator';
import type { Db } from '../../service/db/schema';
import { type KeyRing, parseKeyRingDocument } from '../../service/domain/service-keys';
import { hashPassword } from '../../service/domain/passwords';
import { totp } from '../support/totp';
import { openTotpSecret, sealTotpSecret } from '../../service/domain/totp-secrets';
import { migrateLocalDatabase, serviceKeyFilePath } from '../../service/local/service-key-file';
import { testConfig, testKeyRing } from '../support/app';
import { createTestDatabase, resetDatabase } from '../support/db';
import { WebClient } from '../oauth/support/browser-like';
import { FORM, form, makeUser, PASSWORD, useFixture } from '../oauth/support/harness';
import { mkdtempSync, chmodSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

const f = useFixture();
beforeEach(() => resetDatabase(f.db));

/** Every string in the dump: each column of each row as text, and every string inside JSON values. */
async function dumpStrings(db: Db): Promise<Set<string>> {
  const { rows: tables } = await sql<{ t: string }>`
    select tablename as t from pg_tables where schemaname = 'public'`.execute(db);
  const found = new Set<string>();
  const walk = (v: unknown) => {
    if (typeof v === 'string') {
      found.add(v);
      try {
        walk(JSON.parse(v));
      } catch {}
    } else if (v && typeof v === 'object') for (const x of Object.values(v)) walk(x);
  };
  for (const { t } of tables) {
    const { rows } = await sql<{ j: Record<string, unknown> }>`select to_jsonb(x) as j from ${sql.table(t)} x`.execute(
      db,
    );
    for (const r of rows) walk(r.j);
  }
  return found;
}

/** What a key could be, read from a string: its bytes as hex, base64url or text (≥ 16 bytes). */
function candidateKeys(values: Set<string>): Buffer[] {
  const keys = new Map<string, Buffer>();
  const add = (b: Buffer) => b.length >= 16 && keys.set(b.toString('hex'), b);
  for (const v of values) {
    if (/^[0-9a-f]+$/i.test(v) && v.length % 2 === 0) add(Buffer.from(v, 'hex'));
    if (/^[A-Za-z0-9_-]+$/.test(v)) add(Buffer.from(v, 'base64url'));
    add(Buffer.from(v, 'utf8'));
  }
  return [...keys.values()];
}

const hmac = (key: Buffer, purpose: string, value: string) =>
  createHmac('sha256', key).update(`${purpose}\0${value}`, 'utf8').digest('base64url');

/** The anonymous cookie of the TOTP step (password accepted for `userId`), and its CSRF token. */
function forgePendingTotp(key: Buffer, userId: number) {
  const nonce = randomBytes(16).toString('hex');
  const expiry = String(Math.floor(Date.now() / 1000) + 600);
  const payload = Buffer.from(JSON.stringify({ otp_user_id: userId, otp_started_at: Date.now() })).toString(
    'base64url',
  );
  const signed = `${nonce}.${expiry}.${payload}`;
  return {
    cookie: `_lanyard_session=${signed}.${hmac(key, 'anonymous-session', signed)}`,
    csrf: hmac(key, 'csrf', nonce),
  };
}

async function tryTotpStep(key: Buffer, userId: number, code: string) {
  const { cookie, csrf } = forgePendingTotp(key, userId);
  return f.app.inject({
    method: 'POST',
    url: '/users/sign_in',
    headers: { ...FORM, cookie },
    payload: form({ authenticity_token: csrf, 'user[otp_attempt]': code }),
  });
}

const ringKey = (ring: KeyRing, id: string) => ring.verifying.find((k) => k.id === id)!.secret;

describe('a database dump alone signs in as any two-factor user', () => {
  it('no value in the dump forges the pending-TOTP cookie; the real key (outside the database) does', async () => {
    const { user, otpSecret } = await makeUser(f.db, 'alice', { twoFactor: true });
    // Some ordinary activity first, so the dump is not empty of sessions.
    expect((await new WebClient(f.app).signIn('alice', PASSWORD, () => totp(otpSecret!))).statusCode).toBe(302);
    const candidates = candidateKeys(await dumpStrings(f.db));
    expect(candidates.length).toBeGreaterThan(5);
    for (const key of candidates) {
      // Even handed the right TOTP code, the forged step is refused: its signature does not verify.
      const res = await tryTotpStep(key, user.id, totp(otpSecret!));
      // Not a session: the form is refused as Rails refuses a bad authenticity token, nobody signed in.
      expect(res.statusCode, key.toString('hex')).toBe(422);
      expect(res.body).toContain('Invalid or missing authenticity token.');
      expect(res.headers['set-cookie']).toBeUndefined();
    }
    const ring = await testKeyRing();
    const real = await tryTotpStep(ring.signing.secret, user.id, totp(otpSecret!, Date.now() + 30_000));
    expect(real.statusCode).toBe(302);
    expect(real.headers.location).toBe('/-/profile');
  });

  it('no value in the dump opens a sealed TOTP seed; the real ring does', async () => {
    const { user, otpSecret } = await makeUser(f.db, 'bob', { twoFactor: true });
    const { otp_secret } = await f.db
      .selectFrom('users')
      .select('otp_secret')
      .where('id', '=', user.id)
      .executeTakeFirstOrThrow();
    const keyId = otp_secret!.split('.')[1];
    for (const secret of candidateKeys(await dumpStrings(f.db))) {
      const guess: KeyRing = { signing: { id: keyId, secret, createdAt: new Date(), retiredAt: null }, verifying: [] };
      guess.verifying = [guess.signing];
      expect(() => openTotpSecret(guess, user.id, otp_secret!)).toThrow();
    }
    expect(openTotpSecret(await testKeyRing(), user.id, otp_secret!).secret).toBe(otpSecret);
  });
});

describe('an installation from before 0012: its keys move out of the database', () => {
  const DB_KEY = randomBytes(32).toString('base64url');
  const dbRing = (id: string) =>
    parseKeyRingDocument(
      JSON.stringify({ keys: [{ id, secret: DB_KEY, created_at: '2026-11-01T00:00:00Z', retired_at: null }] }),
    );

  async function oldInstallation() {
    const t = await createTestDatabase({ max: 3 });
    expect((await createMigrator(t.db).migrateTo('0008-retention-indexes')).error).toBeUndefined();
    const { rows } = await sql<{ id: string }>`
      insert into service_keys (purpose, secret) values ('session', ${DB_KEY}) returning id::text as id`.execute(t.db);
    const keyId = rows[0].id;
    // carol as the schema of 0008 holds her (today's createUser names columns added since).
    const { rows: users } = await sql<{ id: number }>`
      insert into users (username, email, name, password_hash)
      values ('carol', 'carol@example.com', 'carol', ${await hashPassword(PASSWORD)}) returning id`.execute(t.db);
    const user = { id: Number(users[0].id) };
    const seed = 'JBSWY3DPEHPK3PXPJBSWY3DPEHPK3PXP';
    await t.db
      .updateTable('users')
      .set({ otp_secret: sealTotpSecret(dbRing(keyId), user.id, seed) })
      .where('id', '=', user.id)
      .execute();
    // carol is signed in: her cookie is signed with the database's key.
    // Her session as the schema of 0008 holds it (createSession names columns added since).
    const session = { id: randomBytes(32).toString('hex') };
    await sql`insert into web_sessions (id_digest, user_id, data, expires_at)
      values (${createHash('sha256').update(session.id).digest('hex')}, ${user.id},
              ${JSON.stringify({ auth_time: Date.now(), sid: randomBytes(16).toString('hex') })},
              now() + interval '1 day')`.execute(t.db);
    const cookie = `_lanyard_session=${session.id}.${hmac(ringKey(dbRing(keyId), keyId), 'session', session.id)}`;
    return { t, keyId, user, seed, cookie };
  }

  const newHome = () => {
    const home = mkdtempSync(path.join(os.tmpdir(), 'lanyard-upgrade-'));
    chmodSync(home, 0o755);
    return home;
  };

  it('start-up moves the keys to LANYARD_HOME (0600), a new key signs, seeds re-sealed; nobody loses access', async () => {
    const { t, keyId, user, seed, cookie } = await oldInstallation();
    const home = newHome();
    const lines: string[] = [];
    const migrated = await migrateLocalDatabase(t.db, home, (l) => lines.push(l));
    expect(migrated.pending).toEqual([]);
    expect(lines[0]).toBe(
      `Moved 1 service key(s) out of the database into ${serviceKeyFilePath(home)}; a new key signs from now on (1 TOTP secret(s) sealed again).`,
    );
    // The table is gone: a dump holds no key.
    const { rows } = await sql<{ t: string | null }>`select to_regclass('public.service_keys')::text as t`.execute(
      t.db,
    );
    expect(rows).toEqual([{ t: null }]);
    expect(statSync(serviceKeyFilePath(home)).mode & 0o777).toBe(0o600);
    const doc = JSON.parse(readFileSync(serviceKeyFilePath(home), 'utf8'));
    expect(doc.keys).toHaveLength(2);
    expect(doc.keys[0]).toMatchObject({ id: expect.stringMatching(/^[0-9a-f]{16}$/), retired_at: null });
    expect(doc.keys[1]).toMatchObject({ id: keyId, secret: DB_KEY, retired_at: expect.any(String) });
    // The seed is sealed under the new key, which has never been in the database.
    const stored = await t.db
      .selectFrom('users')
      .select('otp_secret')
      .where('id', '=', user.id)
      .executeTakeFirstOrThrow();
    expect(stored.otp_secret!.split('.')[1]).toBe(doc.keys[0].id);
    expect(await dumpStrings(t.db)).not.toContain(doc.keys[0].secret);
    const audit = await t.db
      .selectFrom('audit_events')
      .select(['action', 'details'])
      .where('action', 'like', 'service_key.%')
      .execute();
    expect(audit).toEqual([
      { action: 'service_key.move_out_of_database', details: { moved: 1, resealed_totp_secrets: 1 } },
    ]);

    const app = await buildApp({ db: t.db, config: testConfig({ home }), logger: false });
    try {
      // carol's session (signed with the old key) still works; she signs in again with her TOTP.
      const page = await app.inject({ method: 'GET', url: '/-/profile/two_factor_auth', headers: { cookie } });
      expect(page.statusCode).toBe(200);
      const web = new WebClient(app);
      expect((await web.signIn('carol', PASSWORD, () => totp(seed))).headers.location).toBe('/-/profile');
    } finally {
      await app.close();
    }
    // Run again (a restart): nothing left to move, nothing changes.
    const again: string[] = [];
    await migrateLocalDatabase(t.db, home, (l) => again.push(l));
    expect(again).toEqual([]);
    expect(JSON.parse(readFileSync(serviceKeyFilePath(home), 'utf8'))).toEqual(doc);
  });

  it('migration 0012 run alone (no LANYARD_HOME to move the keys to) refuses, and changes nothing', async () => {
    const { t } = await oldInstallation();
    await expect(migrateToLatest(t.db)).rejects.toThrow(
      'service_keys still holds 1 key(s): start Lanyard once with its LANYARD_HOME (npm start, or lanyard-admin db migrate), which moves them to LANYARD_HOME/service-keys.json before migrating',
    );
    const { rows } = await sql<{ n: number }>`select count(*)::int as n from service_keys`.execute(t.db);
    expect(rows).toEqual([{ n: 1 }]);
    expect((await migrationStatus(t.db)).pending).toContain('0012-keys-out-of-database-visibility-by-parent');
  });
});

// The admin CLI and passkeys: `users show` lists a user's passkeys and security keys, `users
// webauthn remove U NAME` removes one (recovery codes go with the last second factor), and
// `users set-2fa off` removes every second factor, WebAuthn included.
import { beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { Db } from '../../service/db/schema';
import { createUser } from '../../service/domain/users';
import { createTestDatabase, resetDatabase } from '../support/db';
import { ACTOR, expectUserError, runIn } from './support';

let db: Db;
beforeAll(async () => {
  ({ db } = await createTestDatabase());
});
beforeEach(() => resetDatabase(db));

const run = (argv: string[]) => runIn(db, argv);

/** A user with two credentials (seeded: the ceremonies are the routes' tests) and recovery codes. */
async function seed() {
  const user = await createUser(db, { username: 'alice', email: 'alice@example.com', password: 'x'.repeat(12) });
  const row = (name: string, deviceType: 'singleDevice' | 'multiDevice', lastUsed: Date | null) => ({
    user_id: user.id,
    credential_id: `cred-${name.replace(/\W/g, '')}-0123456789`,
    public_key: Buffer.from([0xa5]),
    device_type: deviceType,
    backed_up: deviceType === 'multiDevice',
    name,
    created_at: new Date('2026-11-20T10:00:00Z'),
    last_used_at: lastUsed,
  });
  await db
    .insertInto('webauthn_credentials')
    .values([row('Blue key', 'singleDevice', null), row('Phone', 'multiDevice', new Date('2026-11-25T08:30:00Z'))])
    .execute();
  await db
    .insertInto('user_recovery_codes')
    .values([{ user_id: user.id, code_digest: 'a'.repeat(64) }])
    .execute();
  return user;
}

const remaining = async (userId: number) => ({
  credentials: (
    await db.selectFrom('webauthn_credentials').select('name').where('user_id', '=', userId).orderBy('id').execute()
  ).map((r) => r.name),
  recoveryCodes: (await db.selectFrom('user_recovery_codes').select('id').where('user_id', '=', userId).execute())
    .length,
});

describe('users show', () => {
  it('lists the credentials (JSON and a table), never a key', async () => {
    await seed();
    const shown = await run(['users', 'show', 'alice', '--json']);
    expect(shown.code).toBe(0);
    expect(shown.json.two_factor_enabled).toBe(true);
    expect(shown.json.webauthn_credentials).toEqual([
      {
        name: 'Blue key',
        kind: 'security_key',
        backed_up: false,
        created_at: '2026-11-20T10:00:00.000Z',
        last_used_at: null,
      },
      {
        name: 'Phone',
        kind: 'passkey',
        backed_up: true,
        created_at: '2026-11-20T10:00:00.000Z',
        last_used_at: '2026-11-25T08:30:00.000Z',
      },
    ]);
    const text = (await run(['users', 'show', 'alice'])).out;
    const lines = text.trimEnd().split('\n');
    const header = lines.findIndex((l) => l.startsWith('PASSKEY OR SECURITY KEY'));
    expect(lines[header]).toMatch(/^PASSKEY OR SECURITY KEY +TYPE +CREATED +LAST USED$/);
    expect(lines.slice(header + 1).map((l) => l.split(/ {2,}/))).toEqual([
      ['Blue key', 'security key', '2026-11-20', 'never'],
      ['Phone', 'passkey', '2026-11-20', '2026-11-25'],
    ]);
    expect(text).not.toContain('cred-');
  });
});

describe('users webauthn remove', () => {
  it('removes one by name (audited); the last one takes the recovery codes with it', async () => {
    const user = await seed();
    const first = await run(['users', 'webauthn', 'remove', 'alice', 'Blue key', '--yes', '--json']);
    expect(first.code).toBe(0);
    expect(first.json).toEqual({ username: 'alice', removed: 'Blue key' });
    expect(await remaining(user.id)).toEqual({ credentials: ['Phone'], recoveryCodes: 1 });
    const second = await run(['users', 'webauthn', 'remove', 'alice', 'Phone', '--yes']);
    expect(second.out.trim()).toBe('Removed alice\'s passkey "Phone".');
    expect(await remaining(user.id)).toEqual({ credentials: [], recoveryCodes: 0 });
    const audit = await db
      .selectFrom('audit_events')
      .select(['actor', 'action', 'details'])
      .where('action', '=', 'user.webauthn_remove')
      .orderBy('id')
      .execute();
    expect(audit).toEqual([
      { actor: ACTOR, action: 'user.webauthn_remove', details: { name: 'Blue key' } },
      { actor: ACTOR, action: 'user.webauthn_remove', details: { name: 'Phone' } },
    ]);
    expect((await run(['users', 'show', 'alice', '--json'])).json.two_factor_enabled).toBe(false);
  });

  it('an unknown name or user: one line on stderr, exit 1, nothing changed; needs --yes off a terminal', async () => {
    await seed();
    await expectUserError(
      db,
      ['users', 'webauthn', 'remove', 'alice', 'Red key', '--yes'],
      /No such passkey or security key\./,
    );
    await expectUserError(db, ['users', 'webauthn', 'remove', 'nobody', 'Phone', '--yes'], /not found/);
    await expectUserError(db, ['users', 'webauthn', 'remove', 'alice', 'Phone'], /--yes/);
  });
});

describe('users set-2fa off', () => {
  it('removes every second factor, passkeys and security keys included', async () => {
    const user = await seed();
    const res = await run(['users', 'set-2fa', 'alice', 'off', '--json']);
    expect(res.code).toBe(0);
    expect(res.json).toEqual({ username: 'alice', two_factor_enabled: false });
    expect(await remaining(user.id)).toEqual({ credentials: [], recoveryCodes: 0 });
  });
});

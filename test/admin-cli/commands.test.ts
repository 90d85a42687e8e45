// Every admin command in-process (the same runCli the binary and the admin Lambda use) against
// real PostgreSQL: stdout JSON with the contract's keys (§5), stderr, exit codes, and that a
// failed command changes nothing.
import { sql } from 'kysely';
import { beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { COMMANDS } from '../../admin-cli/commands';
import { migrateDownToEmpty } from '../support/db';
import { checkApplicationSecret } from '../../service/domain/applications';
import { registerDynamicClient } from '../../service/domain/dynamic-clients';
import { verifyPassword } from '../../service/domain/passwords';
import { sha256Hex } from '../../service/domain/secrets';
import { verifyTotp } from '../../service/domain/totp';
import { totp } from '../support/totp';
import { openTotpSecret } from '../../service/domain/totp-secrets';
import { consumeRecoveryCode, regenerateRecoveryCodes, remainingRecoveryCodes } from '../../service/domain/two-factor';
import { findUserByUsername, verifiedEmails } from '../../service/domain/users';
import type { Db } from '../../service/db/schema';
import { testKeyRing } from '../support/app';
import { createTestDatabase, resetDatabase } from '../support/db';
import { ACTOR, expectUserError, fingerprint, runIn } from './support';

let db: Db;
beforeAll(async () => {
  ({ db } = await createTestDatabase());
});
beforeEach(() => resetDatabase(db));

const PASSWORD = 'correct horse battery staple';
const run = (argv: string[], options?: Parameters<typeof runIn>[2]) => runIn(db, argv, options);
const createAlice = () =>
  run(
    [
      'users',
      'create',
      '--username',
      'alice',
      '--email',
      'alice@example.com',
      '--name',
      'Alice Liddell',
      '--password-stdin',
      '--json',
    ],
    {
      stdin: `${PASSWORD}\n`,
    },
  );
const auditActions = async () =>
  await db.selectFrom('audit_events').select(['actor', 'action', 'details']).orderBy('id').execute();

describe('db', () => {
  it('db status and db migrate print {applied, pending}', async () => {
    const status = await run(['db', 'status', '--json']);
    expect(status.code).toBe(0);
    expect(Object.keys(status.json)).toEqual(['applied', 'pending']);
    expect(status.json.applied.length).toBeGreaterThan(0);
    expect(status.json.pending).toEqual([]);
    const migrate = await run(['db', 'migrate', '--json']);
    expect(migrate).toMatchObject({ code: 0, err: '' });
    expect(migrate.json).toEqual(status.json);
    expect((await run(['db', 'migrate'])).out).toMatch(/^The database is up to date/);
    expect((await run(['db', 'status'])).out).toMatch(/MIGRATION\s+STATE\n/);
  });

  it('refuses other commands on a database with pending migrations, and db migrate applies them', async () => {
    const fresh = await createTestDatabase();
    await migrateDownToEmpty(fresh.db);
    const refused = await runIn(fresh.db, ['users', 'list', '--json']);
    expect(refused.code).toBe(1);
    expect(refused.err).toMatch(
      /^lanyard-admin: the database has \d+ pending migration\(s\): run `lanyard-admin db migrate` first\n$/,
    );
    const status = await runIn(fresh.db, ['db', 'status', '--json']);
    expect(status.json.applied).toEqual([]);
    const migrate = await runIn(fresh.db, ['db', 'migrate', '--json']);
    expect(migrate.code).toBe(0);
    expect(migrate.json).toEqual({ applied: status.json.pending, pending: [] });
    expect(await fresh.db.selectFrom('audit_events').select(['actor', 'action', 'details']).execute()).toEqual([
      { actor: ACTOR, action: 'database.migrate', details: { migrations: status.json.pending } },
    ]);
    expect((await runIn(fresh.db, ['users', 'list', '--json'])).json).toEqual([]);
  });
});

describe('users', () => {
  it('users create prints exactly the contract keys and stores a working password hash', async () => {
    const created = await createAlice();
    expect(created).toMatchObject({ code: 0, err: '' });
    expect(created.json).toEqual({
      id: expect.any(Number),
      username: 'alice',
      email: 'alice@example.com',
      name: 'Alice Liddell',
      is_admin: false,
      two_factor_enabled: false,
    });
    const user = await findUserByUsername(db, 'alice');
    expect(await verifyPassword(PASSWORD, user!.password_hash)).toBe(true);
    const admin = await run(
      ['users', 'create', '--username', 'ops', '--email', 'ops@example.com', '--admin', '--password-stdin', '--json'],
      { stdin: PASSWORD },
    );
    expect(admin.json).toMatchObject({ username: 'ops', name: 'ops', is_admin: true });
    // The audit trail names the operator and never holds the password.
    const audit = await auditActions();
    expect(audit.map((a) => [a.actor, a.action])).toEqual([
      [ACTOR, 'user.create'],
      [ACTOR, 'user.create'],
    ]);
    expect(JSON.stringify(audit)).not.toContain(PASSWORD);
  });

  it('human output: a record, and an aligned table for users list', async () => {
    await createAlice();
    const human = await run(['users', 'show', 'alice']);
    expect(human.out).toMatch(/^id: +\d+\nusername: +alice\n/);
    await run(['users', 'create', '--username', 'bob', '--email', 'bob@example.com', '--password-stdin'], {
      stdin: PASSWORD,
    });
    const list = await run(['users', 'list']);
    const lines = list.out.trimEnd().split('\n');
    expect(lines[0]).toMatch(/^ID +USERNAME +NAME +EMAIL +STATE +ADMIN +2FA$/);
    expect(lines.slice(1).map((l) => l.split(/ {2,}/))).toEqual([
      ['1', 'alice', 'Alice Liddell', 'alice@example.com', 'active', 'no', 'no'],
      ['2', 'bob', 'bob', 'bob@example.com', 'active', 'no', 'no'],
    ]);
    // Columns line up: every row's e-mail starts where the EMAIL header does.
    const col = lines[0].indexOf('EMAIL');
    for (const line of lines.slice(1)) expect(line.slice(col)).toMatch(/^\S+@/);
  });

  it('users list / show print the user(s)', async () => {
    await createAlice();
    const list = await run(['users', 'list', '--json']);
    expect(list.json).toEqual([
      {
        id: 1,
        username: 'alice',
        email: 'alice@example.com',
        name: 'Alice Liddell',
        state: 'active',
        is_admin: false,
        two_factor_enabled: false,
        emails: [],
        created_at: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/),
      },
    ]);
    expect((await run(['users', 'show', 'ALICE', '--json'])).json).toEqual({
      ...list.json[0],
      webauthn_credentials: [],
    });
  });

  it('users create rejects a duplicate username, a bad e-mail, a short password, and changes nothing', async () => {
    await createAlice();
    const create = (username: string, email: string) => [
      'users',
      'create',
      '--username',
      username,
      '--email',
      email,
      '--password-stdin',
    ];
    await expectUserError(db, create('alice', 'other@example.com'), /username has already been taken/, {
      stdin: PASSWORD,
    });
    await expectUserError(db, create('Alice', 'other@example.com'), /username has already been taken/, {
      stdin: PASSWORD,
    });
    await expectUserError(db, create('carol', 'alice@example.com'), /email has already been taken/, {
      stdin: PASSWORD,
    });
    await expectUserError(db, create('carol', 'not-an-email'), /email "not-an-email" is invalid/, { stdin: PASSWORD });
    await expectUserError(db, create('carol', 'carol@example.com'), /password is too short/, { stdin: 'short' });
    await expectUserError(
      db,
      ['users', 'create', '--username=-carol', '--email', 'c@example.com', '--password-stdin'],
      /username "-carol" is invalid/,
      { stdin: PASSWORD },
    );
  });

  it('passwords: --password warns about shell history, stdin and the hidden prompt work, nothing else does', async () => {
    const viaFlag = await run([
      'users',
      'create',
      '--username',
      'a1',
      '--email',
      'a1@example.com',
      '--password',
      PASSWORD,
      '--json',
    ]);
    expect(viaFlag.code).toBe(0);
    expect(viaFlag.err).toBe(
      'lanyard-admin: warning: --password leaves the password in your shell history and the process list; prefer --password-stdin or the prompt\n',
    );
    const prompted = await run(['users', 'create', '--username', 'a2', '--email', 'a2@example.com', '--json'], {
      answers: [PASSWORD, PASSWORD],
    });
    expect(prompted.code).toBe(0);
    expect(prompted.err).toBe('Password: \nConfirm password: \n');
    expect(await verifyPassword(PASSWORD, (await findUserByUsername(db, 'a2'))!.password_hash)).toBe(true);
    const create = ['users', 'create', '--username', 'a3', '--email', 'a3@example.com'];
    await expectUserError(db, create, /the passwords do not match/, { answers: [PASSWORD, 'something else'] });
    await expectUserError(db, create, /a password is required: pipe it to --password-stdin/);
    await expectUserError(db, [...create, '--password-stdin'], /no password on standard input/, { stdin: '' });
    await expectUserError(db, [...create, '--password', PASSWORD, '--password-stdin'], /mutually exclusive|not both/, {
      stdin: PASSWORD,
    });
  });

  it('users block asks on a terminal, requires --yes elsewhere; unblock restores', async () => {
    await createAlice();
    await expectUserError(
      db,
      ['users', 'block', 'alice'],
      /^lanyard-admin: Block user alice: refusing without --yes \(not on a terminal\)$/,
    );
    await expectUserError(db, ['users', 'block', 'alice'], /aborted; nothing changed/, { answers: ['n'] });
    const asked = await run(['users', 'block', 'alice', '--json'], { answers: ['y'] });
    expect(asked.code).toBe(0);
    expect(asked.err).toMatch(/^Block user alice\? .* \[y\/N\] \n$/);
    expect(asked.json).toMatchObject({ username: 'alice', state: 'blocked' });
    const unblocked = await run(['users', 'unblock', 'alice', '--json']);
    expect(unblocked.json).toMatchObject({ username: 'alice', state: 'active' });
    const blocked = await run(['users', 'block', 'alice', '--yes', '--json']);
    expect(blocked.json.state).toBe('blocked');
    expect((await auditActions()).map((a) => a.action)).toEqual([
      'user.create',
      'user.block',
      'user.unblock',
      'user.block',
    ]);
    await expectUserError(db, ['users', 'block', 'nobody', '--yes'], /user "nobody" not found/);
    await expectUserError(db, ['users', 'unblock', 'nobody'], /user "nobody" not found/);
  });

  it('users set-password replaces the password', async () => {
    await createAlice();
    const res = await run(['users', 'set-password', 'alice', '--password-stdin', '--json'], {
      stdin: 'a brand new password\n',
    });
    expect(res.code).toBe(0);
    expect(res.json).toMatchObject({ username: 'alice' });
    const hash = (await findUserByUsername(db, 'alice'))!.password_hash;
    expect(await verifyPassword('a brand new password', hash)).toBe(true);
    expect(await verifyPassword(PASSWORD, hash)).toBe(false);
    await expectUserError(db, ['users', 'set-password', 'nobody', '--password-stdin'], /user "nobody" not found/, {
      stdin: PASSWORD,
    });
    await expectUserError(db, ['users', 'set-password', 'alice', '--password-stdin'], /password is too short/, {
      stdin: 'x',
    });
  });

  it('users add-email adds a verified address; --no-confirmed mails it a link instead', async () => {
    await createAlice();
    const res = await run(['users', 'add-email', 'alice', 'alice@home.example', '--json']);
    expect(res.code).toBe(0);
    expect(res.json).toMatchObject({ username: 'alice', email: 'alice@example.com', emails: ['alice@home.example'] });
    const alice = (await findUserByUsername(db, 'alice'))!;
    expect(await verifiedEmails(db, alice)).toEqual(['alice@example.com', 'alice@home.example']);
    expect(await db.selectFrom('mail_outbox').select(['kind', 'to_address']).orderBy('id').execute()).toEqual([
      { kind: 'security_alert.email_added', to_address: 'alice@example.com' },
    ]);
    expect((await run(['users', 'add-email', 'alice', 'alice@home2.example', '--confirmed'])).out).toContain(
      'Added alice@home2.example to alice, confirmed.',
    );

    const linked = await run(['users', 'add-email', 'alice', 'alice@work.example', '--no-confirmed']);
    expect(linked.code).toBe(0);
    expect(linked.out).toContain('Added alice@work.example to alice; a confirmation link was sent to it.');
    expect(await verifiedEmails(db, alice)).toEqual(['alice@example.com', 'alice@home.example', 'alice@home2.example']);
    expect(
      await db
        .selectFrom('mail_outbox')
        .select(['kind', 'to_address'])
        .where('kind', '=', 'email_confirmation')
        .execute(),
    ).toEqual([{ kind: 'email_confirmation', to_address: 'alice@work.example' }]);

    await expectUserError(db, ['users', 'add-email', 'alice', 'bad email'], /email "bad email" is invalid/);
    await expectUserError(db, ['users', 'add-email', 'alice', 'ALICE@work.example'], /email has already been taken/);
    await expectUserError(db, ['users', 'add-email', 'nobody', 'n@example.com'], /user "nobody" not found/);

    // Ten confirmation links an hour per account, as on the page: the eleventh is a user error.
    for (let i = 2; i <= 10; i++)
      expect((await run(['users', 'add-email', 'alice', `a${i}@work.example`, '--no-confirmed'])).code).toBe(0);
    await expectUserError(
      db,
      ['users', 'add-email', 'alice', 'a11@work.example', '--no-confirmed'],
      /too many confirmation e-mails for this account: try again in 60 minutes, or add it without --no-confirmed/,
    );
    expect((await run(['users', 'add-email', 'alice', 'a11@work.example'])).code).toBe(0);
  });

  it('set-password, set-2fa off and tokens create alert the account’s primary address', async () => {
    await createAlice();
    expect(
      (await run(['users', 'set-password', 'alice', '--password-stdin'], { stdin: 'another long password\n' })).code,
    ).toBe(0);
    expect((await run(['users', 'set-2fa', 'alice', 'on'])).code).toBe(0);
    expect((await run(['users', 'set-2fa', 'alice', 'off'])).code).toBe(0);
    expect((await run(['tokens', 'create', '--user', 'alice', '--name', 'ci', '--scopes', 'api'])).code).toBe(0);
    const mails = await db
      .selectFrom('mail_outbox')
      .select(['kind', 'to_address', 'text_body'])
      .orderBy('id')
      .execute();
    expect(mails.map((m) => [m.kind, m.to_address])).toEqual([
      ['security_alert.password_changed', 'alice@example.com'],
      ['security_alert.two_factor_disabled', 'alice@example.com'],
      ['security_alert.personal_access_token_created', 'alice@example.com'],
    ]);
    expect(mails[0].text_body).toMatch(/^Hi Alice Liddell,\n/);
  });

  it('users set-2fa on prints the secret, the otpauth URI and, on a terminal only, a QR code; off removes it', async () => {
    await createAlice();
    const on = await run(['users', 'set-2fa', 'alice', 'on', '--json']);
    expect(on.code).toBe(0);
    expect(Object.keys(on.json)).toEqual([
      'username',
      'two_factor_enabled',
      'otp_secret',
      'otpauth_uri',
      'recovery_codes',
    ]);
    // Ten recovery codes, as the account page issues: never "0 of 10" after enrolling here.
    expect(on.json.recovery_codes).toHaveLength(10);
    for (const code of on.json.recovery_codes)
      expect(code).toMatch(/^[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}$/);
    const alice = (await findUserByUsername(db, 'alice'))!;
    expect(await remainingRecoveryCodes(db, alice.id)).toBe(10);
    expect(await consumeRecoveryCode(db, alice.id, on.json.recovery_codes[0])).toBe(true);
    expect(await consumeRecoveryCode(db, alice.id, on.json.recovery_codes[0])).toBe(false);
    expect(on.json).toMatchObject({
      username: 'alice',
      two_factor_enabled: true,
      otp_secret: expect.stringMatching(/^[A-Z2-7]{32}$/),
    });
    expect(on.json.otpauth_uri).toBe(
      `otpauth://totp/Lanyard%3Aalice%40example.com?secret=${on.json.otp_secret}&issuer=Lanyard&algorithm=SHA1&digits=6&period=30`,
    );
    // Stored sealed (AES-256-GCM under the key ring's signing key), never in clear.
    const stored = (await findUserByUsername(db, 'alice'))!;
    const ring = await testKeyRing();
    expect(stored.otp_secret).toMatch(new RegExp(`^totp1\\.${ring.signing.id}\\.[A-Za-z0-9_-]{16}\\.[A-Za-z0-9_-]+$`));
    expect(stored.otp_secret).not.toContain(on.json.otp_secret);
    const opened = openTotpSecret(ring, stored.id, stored.otp_secret!);
    expect(verifyTotp(opened.secret, totp(on.json.otp_secret), null)).toBeDefined();
    // On a terminal (stdout has columns): the QR code, in half blocks.
    const human = await run(['users', 'set-2fa', 'alice', 'on'], { columns: 80 });
    expect(human.out).toContain('otpauth://totp/');
    expect(human.out).toMatch(/[▀▄█]{20,}/);
    expect(human.out).toContain('shown only once');
    // Into a file or a pipe: the URI and the secret, no QR code.
    const piped = await run(['users', 'set-2fa', 'alice', 'on']);
    expect(piped.out).toMatch(
      /^Two-factor authentication is on for alice\. Add it to an authenticator app:\notp_secret: /,
    );
    expect(piped.out).toContain('otpauth://totp/');
    expect(piped.out).not.toMatch(/[▀▄█]/);
    // Recovery codes from the account page: turning 2FA off here must remove them too, as the
    // page's Disable does (a leftover code would still sign in once 2FA is turned on again).
    await regenerateRecoveryCodes(db, stored.id, { actor: 'user:alice' });
    const codeCount = () =>
      db
        .selectFrom('user_recovery_codes')
        .select((eb) => eb.fn.countAll<number>().as('n'))
        .where('user_id', '=', stored.id)
        .executeTakeFirstOrThrow();
    expect(await codeCount()).toEqual({ n: 10 });
    const off = await run(['users', 'set-2fa', 'alice', 'off', '--json']);
    expect(off.json).toEqual({ username: 'alice', two_factor_enabled: false });
    expect((await findUserByUsername(db, 'alice'))!.otp_secret).toBeNull();
    expect(await codeCount()).toEqual({ n: 0 });
    await expectUserError(db, ['users', 'set-2fa', 'alice', 'maybe'], /Invalid values/);
    await expectUserError(db, ['users', 'set-2fa', 'nobody', 'on'], /user "nobody" not found/);
    const audit = JSON.stringify(await auditActions());
    expect(audit).not.toContain(on.json.otp_secret);
    expect(audit).not.toContain(on.json.recovery_codes[1]);
  });

  it('users set-2fa on --require-enrolment: no secret printed, the old one and its codes gone, signed out', async () => {
    await createAlice();
    const first = await run(['users', 'set-2fa', 'alice', 'on']);
    expect([first.code, first.err]).toEqual([0, '']);
    const required = await run(['users', 'set-2fa', 'alice', 'on', '--require-enrolment', '--json']);
    expect([required.code, required.err]).toEqual([0, '']);
    expect(required.json).toEqual({
      username: 'alice',
      two_factor_enabled: false,
      two_factor_enrolment_required: true,
    });
    const row = await db
      .selectFrom('users')
      .select(['otp_secret', 'otp_enrolment_required'])
      .where('username', '=', 'alice')
      .executeTakeFirstOrThrow();
    expect(row).toEqual({ otp_secret: null, otp_enrolment_required: true });
    const codes = await db.selectFrom('user_recovery_codes').select('id').execute();
    expect(codes).toEqual([]);
    expect((await auditActions()).map((a) => a.action)).toContain('user.require_2fa_enrolment');
    const human = await run(['users', 'set-2fa', 'alice', 'on', '--require-enrolment']);
    expect(human.out).toBe(
      'alice will set up two-factor authentication at their next sign-in (signed out everywhere now).\n',
    );
    await expectUserError(
      db,
      ['users', 'set-2fa', 'alice', 'off', '--require-enrolment'],
      /--require-enrolment goes with on/,
    );
  });
});

describe('apps', () => {
  const register = (...extra: string[]) =>
    run(['apps', 'register', '--name', 'CI', '--redirect-uri', 'https://ci.example.com/cb', ...extra, '--json']);

  it('apps register prints exactly the contract keys, with a secret shown once', async () => {
    const res = await register('--redirect-uri', 'http://127.0.0.1/cb', '--scopes', 'read_user api');
    expect(res).toMatchObject({ code: 0, err: '' });
    expect(res.json).toEqual({
      id: expect.any(Number),
      application_id: expect.stringMatching(/^[0-9a-f]{64}$/),
      application_name: 'CI',
      secret: expect.stringMatching(/^gloas-[0-9a-f]{64}$/),
      callback_url: 'https://ci.example.com/cb\nhttp://127.0.0.1/cb',
      scopes: ['api', 'read_user'],
      confidential: true,
      trusted: false,
    });
    expect(
      (
        await checkApplicationSecret(db, {
          uid: res.json.application_id,
          secret: res.json.secret,
          address: '192.0.2.1',
        })
      ).ok,
    ).toBe(true);
    const withLogout = await register('--post-logout-redirect-uri', 'https://ci.example.com/bye');
    expect(withLogout.code).toBe(0);
    expect(
      await db
        .selectFrom('oauth_applications')
        .select('post_logout_redirect_uris')
        .where('uid', '=', withLogout.json.application_id)
        .executeTakeFirstOrThrow(),
    ).toEqual({ post_logout_redirect_uris: ['https://ci.example.com/bye'] });
    const pub = await register('--public', '--trusted');
    expect(pub.json).toMatchObject({ confidential: false, trusted: true, scopes: ['api', 'read_api', 'read_user'] });
    const human = await run(['apps', 'register', '--name', 'H', '--redirect-uri', 'https://h.example/cb']);
    expect(human.out).toMatch(/^Registered application H\.\n/);
    expect(human.out).toMatch(/secret: +gloas-[0-9a-f]{64}\n/);
    expect(JSON.stringify(await auditActions())).not.toMatch(/gloas-/);
  });

  it('apps register refuses dangerous redirect URIs, unknown scopes and unknown owners, changing nothing', async () => {
    const base = ['apps', 'register', '--name', 'Bad'];
    const named = (name: string) => ['apps', 'register', '--name', name, '--redirect-uri', 'https://x.example/cb'];
    await expectUserError(db, named('x'.repeat(256)), /name is too long \(maximum is 255 characters\)/);
    await expectUserError(db, named(' '), /name must not be empty/);
    await expectUserError(db, [...base, '--redirect-uri', 'javascript:alert(1)'], /forbidden scheme \(javascript:\)/);
    await expectUserError(
      db,
      [...base, '--redirect-uri', 'https://ok.example/cb', '--redirect-uri', 'https://x.example/cb#frag'],
      /must not contain a fragment/,
    );
    await expectUserError(db, [...base, '--redirect-uri', 'data:text/html,hi'], /forbidden scheme/);
    await expectUserError(db, [...base, '--redirect-uri', 'not a uri'], /is not an absolute URI/);
    await expectUserError(
      db,
      [...base, '--redirect-uri', 'https://x.example/cb', '--scopes', 'api sudo write_repository'],
      /unknown scopes: sudo, write_repository/,
    );
    await expectUserError(
      db,
      [...base, '--redirect-uri', 'https://x.example/cb', '--owner', 'nobody'],
      /user "nobody" not found/,
    );
    await expectUserError(
      db,
      ['apps', 'register', '--redirect-uri', 'https://x.example/cb'],
      /Missing required argument: name/,
    );
  });

  it('apps register/update --allowed-resource, --any-resource; apps list --dynamic shows self-registered ones', async () => {
    const mcp = 'https://mcp.example.com/mcp';
    const created = await run([
      ...['apps', 'register', '--name', 'Agent', '--redirect-uri', 'https://agent.example/cb'],
      ...['--allowed-resource', mcp, '--json'],
    ]);
    expect(created.code).toBe(0);
    const shown = await run(['apps', 'show', String(created.json.id), '--json']);
    expect(shown.json.allowed_resources).toEqual([mcp]);
    // expectUserError also checks that nothing changed.
    await expectUserError(
      db,
      ['apps', 'update', String(created.json.id), '--allowed-resource', 'http://mcp.example.com/'],
      /resource "http:\/\/mcp.example.com\/" must be an https URI/,
    );
    const cleared = await run(['apps', 'update', String(created.json.id), '--any-resource', '--json']);
    expect(cleared.json.allowed_resources).toBeNull();
    expect((await run(['apps', 'list', '--dynamic', '--json'])).json).toEqual([]);
    await registerDynamicClient(db, {
      metadata: { client_name: 'Self', redirect_uris: ['http://127.0.0.1/cb'] },
      address: '192.0.2.1',
      allowedScopes: ['read_user'],
    });
    const dynamic = await run(['apps', 'list', '--dynamic', '--json']);
    expect(dynamic.json.map((a: any) => [a.application_name, a.dynamically_registered, a.owner_id])).toEqual([
      ['Self', true, null],
    ]);
    expect((await run(['apps', 'list', '--dynamic'], { columns: 200 })).out).toContain('public dynamic');
  });

  it('apps list / show / delete never print the secret; delete needs --yes off a terminal', async () => {
    await createAlice();
    const a = (await register('--owner', 'alice')).json;
    const b = (await register()).json;
    const list = await run(['apps', 'list', '--json']);
    expect(list.json.map((x: any) => x.application_id)).toEqual([a.application_id, b.application_id]);
    expect(list.json[0]).toEqual({
      id: a.id,
      application_id: a.application_id,
      application_name: 'CI',
      callback_url: 'https://ci.example.com/cb',
      redirect_uris: ['https://ci.example.com/cb'],
      post_logout_redirect_uris: [],
      backchannel_logout_uri: null,
      backchannel_logout_session_required: false,
      scopes: ['api', 'read_api', 'read_user'],
      confidential: true,
      trusted: false,
      dpop_bound_access_tokens: false,
      owner_id: 1,
      allowed_resources: null,
      dynamically_registered: false,
      created_at: expect.any(String),
    });
    expect((await run(['apps', 'list', '--owner', 'alice', '--json'])).json).toHaveLength(1);
    const show = await run(['apps', 'show', a.application_id, '--json']);
    expect(show.json).toEqual(list.json[0]);
    // The id `apps list` prints first works as well.
    expect((await run(['apps', 'show', String(a.id), '--json'])).json).toEqual(list.json[0]);
    expect((await run(['apps', 'show', String(b.id), '--json'])).json.application_id).toBe(b.application_id);
    await expectUserError(db, ['apps', 'show', '999'], /application "999" not found/);
    for (const out of [
      list.out,
      show.out,
      (await run(['apps', 'list'])).out,
      (await run(['apps', 'show', a.application_id])).out,
    ]) {
      expect(out).not.toMatch(/gloas-|"secret"|secret:/);
    }
    expect((await run(['apps', 'list'])).out).toMatch(/^ID +NAME +APP ID +TYPE +SCOPES +REDIRECT URIS\n/);
    await expectUserError(db, ['apps', 'show', 'f'.repeat(64)], /application "f{64}" not found/);
    await expectUserError(db, ['apps', 'delete', a.application_id], /refusing without --yes/);
    const deleted = await run(['apps', 'delete', a.application_id, '--yes', '--json']);
    expect(deleted.code).toBe(0);
    expect(deleted.json).toEqual(list.json[0]);
    expect((await run(['apps', 'list', '--json'])).json).toHaveLength(1);
    await expectUserError(db, ['apps', 'delete', a.application_id, '--yes'], /not found/);
  });

  it('apps update changes name, redirect URIs, scopes and type; App ID and secret stay; bad input changes nothing', async () => {
    const app = (await register()).json;
    const updated = await run([
      'apps',
      'update',
      String(app.id),
      '--name',
      'CI dashboard',
      '--redirect-uri',
      'https://ci.example.com/oauth/callback',
      '--redirect-uri',
      'http://127.0.0.1/cb',
      '--scopes',
      'read_user openid',
      '--json',
    ]);
    expect(updated.code).toBe(0);
    expect(updated.json).toEqual({
      id: app.id,
      application_id: app.application_id,
      application_name: 'CI dashboard',
      callback_url: 'https://ci.example.com/oauth/callback\nhttp://127.0.0.1/cb',
      redirect_uris: ['https://ci.example.com/oauth/callback', 'http://127.0.0.1/cb'],
      post_logout_redirect_uris: [],
      backchannel_logout_uri: null,
      backchannel_logout_session_required: false,
      scopes: ['openid', 'read_user'],
      confidential: true,
      trusted: false,
      dpop_bound_access_tokens: false,
      owner_id: null,
      allowed_resources: null,
      dynamically_registered: false,
      created_at: expect.any(String),
    });
    expect(
      (await checkApplicationSecret(db, { uid: app.application_id, secret: app.secret, address: '192.0.2.1' })).ok,
    ).toBe(true);
    const pub = await run(['apps', 'update', app.application_id, '--no-confidential', '--json']);
    expect(pub.json).toMatchObject({
      application_id: app.application_id,
      confidential: false,
      scopes: ['openid', 'read_user'],
    });
    expect((await auditActions()).filter((a) => a.action === 'application.update')).toEqual([
      {
        actor: ACTOR,
        action: 'application.update',
        details: {
          name: 'CI dashboard',
          redirect_uris: ['https://ci.example.com/oauth/callback', 'http://127.0.0.1/cb'],
          scopes: ['openid', 'read_user'],
        },
      },
      { actor: ACTOR, action: 'application.update', details: { confidential: false } },
    ]);
    const logout = await run([
      'apps',
      'update',
      String(app.id),
      '--post-logout-redirect-uri',
      'https://ci.example.com/bye',
      '--backchannel-logout-uri',
      'https://ci.example.com/bcl',
      '--backchannel-logout-session-required',
      '--json',
    ]);
    expect(logout.json).toMatchObject({
      post_logout_redirect_uris: ['https://ci.example.com/bye'],
      backchannel_logout_uri: 'https://ci.example.com/bcl',
      backchannel_logout_session_required: true,
    });
    const cleared = await run(['apps', 'update', String(app.id), '--backchannel-logout-uri', '', '--json']);
    expect(cleared.json).toMatchObject({ backchannel_logout_uri: null });
    await expectUserError(
      db,
      ['apps', 'update', String(app.id), '--backchannel-logout-uri', 'https://x.example/#f'],
      /fragment/,
    );
    await expectUserError(db, ['apps', 'update', String(app.id)], /nothing to change/);
    await expectUserError(db, ['apps', 'update', String(app.id), '--redirect-uri', 'javascript:alert(1)'], /redirect/i);
    await expectUserError(db, ['apps', 'update', String(app.id), '--scopes', 'root'], /scope/i);
    await expectUserError(db, ['apps', 'update', String(app.id), '--name', ''], /name/i);
    await expectUserError(db, ['apps', 'update', '999', '--name', 'x'], /application "999" not found/);
  });

  it('apps register --dpop-bound-access-tokens and apps update --no-dpop-bound-access-tokens (RFC 9449 §5.2)', async () => {
    const app = (await register('--dpop-bound-access-tokens')).json;
    const shown = await run(['apps', 'show', app.application_id, '--json']);
    expect(shown.json.dpop_bound_access_tokens).toBe(true);
    const off = await run(['apps', 'update', String(app.id), '--no-dpop-bound-access-tokens', '--json']);
    expect(off.code).toBe(0);
    expect(off.json.dpop_bound_access_tokens).toBe(false);
    expect((await auditActions()).filter((a) => a.action === 'application.update')).toEqual([
      { actor: ACTOR, action: 'application.update', details: { dpop_bound_access_tokens: false } },
    ]);
    expect((await register()).json.application_id).toMatch(/^[0-9a-f]{64}$/);
    const plain = await run(['apps', 'list', '--json']);
    expect(plain.json.map((a: { dpop_bound_access_tokens: boolean }) => a.dpop_bound_access_tokens)).toEqual([
      false,
      false,
    ]);
  });

  it('apps rotate-secret: the new secret works and the old one stops at once', async () => {
    const app = (await register()).json;
    const rotated = await run(['apps', 'rotate-secret', app.application_id, '--json']);
    expect(rotated.code).toBe(0);
    expect(rotated.json).toEqual({
      application_id: app.application_id,
      secret: expect.stringMatching(/^gloas-[0-9a-f]{64}$/),
    });
    expect(rotated.json.secret).not.toBe(app.secret);
    expect(
      (await checkApplicationSecret(db, { uid: app.application_id, secret: app.secret, address: '192.0.2.1' })).ok,
    ).toBe(false);
    expect(
      (await checkApplicationSecret(db, { uid: app.application_id, secret: rotated.json.secret, address: '192.0.2.1' }))
        .ok,
    ).toBe(true);
    await expectUserError(db, ['apps', 'rotate-secret', '0'.repeat(64)], /not found/);
    expect(JSON.stringify(await auditActions())).not.toMatch(/gloas-/);
  });
});

describe('tokens', () => {
  it('tokens create / list / revoke', async () => {
    await createAlice();
    const created = await run([
      'tokens',
      'create',
      '--user',
      'alice',
      '--name',
      'ci',
      '--scopes',
      'read_api read_user',
      '--expires-at',
      '2099-12-31',
      '--json',
    ]);
    expect(created.code).toBe(0);
    expect(created.json).toEqual({
      id: 1,
      name: 'ci',
      token: expect.stringMatching(/^glpat-[A-Za-z0-9_-]{20,}$/),
      scopes: ['read_api', 'read_user'],
      expires_at: '2099-12-31',
      user: 'alice',
    });
    expect(
      await db
        .selectFrom('personal_access_tokens')
        .select('id')
        .where('token_digest', '=', sha256Hex(created.json.token))
        .execute(),
    ).toEqual([{ id: 1 }]);
    const list = await run(['tokens', 'list', '--json']);
    const view = {
      id: 1,
      name: 'ci',
      scopes: ['read_api', 'read_user'],
      expires_at: '2099-12-31',
      revoked: false,
      active: true,
      last_used_at: null,
      created_at: expect.any(String),
      user: 'alice',
    };
    expect(list.json).toEqual([view]);
    expect((await run(['tokens', 'list', '--user', 'alice', '--json'])).json).toEqual([view]);
    expect(list.out + (await run(['tokens', 'list'])).out).not.toContain(created.json.token);
    expect((await run(['tokens', 'list'])).out.trimEnd()).toMatch(
      /^ID +USER +NAME +SCOPES +EXPIRES +STATE +LAST USED\n1 +alice +ci +read_api read_user +2099-12-31 +active +-$/,
    );
    // Without --expires-at: 30 days from today (UTC), as the page offers; `never` is explicit.
    const today = new Date();
    const plus30 = new Date(Date.UTC(today.getUTCFullYear(), today.getUTCMonth(), today.getUTCDate() + 30));
    const dated = await run(['tokens', 'create', '--user', 'alice', '--name', 'd', '--scopes', 'api', '--json']);
    expect(dated.json.expires_at).toBe(plus30.toISOString().slice(0, 10));
    const forever = ['tokens', 'create', '--user', 'alice', '--name', 'f', '--scopes', 'api', '--expires-at', 'never'];
    expect((await run([...forever, '--json'])).json.expires_at).toBeNull();
    await expectUserError(
      db,
      ['tokens', 'create', '--user', 'alice', '--name', 'x', '--scopes', 'api', '--expires-at', 'someday'],
      /expires-at "someday" is not a date \(YYYY-MM-DD\)/,
    );
    await run(['tokens', 'revoke', '2', '--yes']);
    await run(['tokens', 'revoke', '3', '--yes']);
    await expectUserError(db, ['tokens', 'revoke', '1'], /refusing without --yes/);
    const revoked = await run(['tokens', 'revoke', '1', '--yes', '--json']);
    expect(revoked.json).toEqual({ ...view, revoked: true, active: false });
    expect((await run(['tokens', 'list', '--json'])).json.map((t: { revoked: boolean }) => t.revoked)).toEqual([
      true,
      true,
      true,
    ]);
    expect(JSON.stringify(await auditActions())).not.toContain(created.json.token);
  });

  it('tokens create / list / revoke refuse bad input and change nothing', async () => {
    await createAlice();
    const create = (...a: string[]) => ['tokens', 'create', '--user', 'alice', '--name', 'ci', ...a];
    await expectUserError(db, create('--scopes', 'api admin'), /unknown scope: admin/);
    await expectUserError(db, create('--scopes', ''), /scopes must not be empty/);
    const tokenNamed = (name: string) => ['tokens', 'create', '--user', 'alice', '--name', name, '--scopes', 'api'];
    await expectUserError(db, tokenNamed('x'.repeat(256)), /name is too long \(maximum is 255 characters\)/);
    await expectUserError(db, tokenNamed('   '), /name must not be empty/);
    await expectUserError(db, create('--scopes', 'api', '--expires-at', '2024-02-30'), /is not a date/);
    await expectUserError(db, create('--scopes', 'api', '--expires-at', '2001-01-01'), /is in the past/);
    await expectUserError(
      db,
      ['tokens', 'create', '--user', 'nobody', '--name', 'x', '--scopes', 'api'],
      /user "nobody" not found/,
    );
    await expectUserError(db, ['tokens', 'list', '--user', 'nobody'], /user "nobody" not found/);
    await expectUserError(db, ['tokens', 'revoke', 'abc', '--yes'], /token id "abc" is not a number/);
    await expectUserError(db, ['tokens', 'revoke', '99', '--yes'], /personal access token 99 not found/);
  });
});

describe('groups, projects, members', () => {
  it('create nested groups, a project, and members', async () => {
    await createAlice();
    const group = await run([
      'groups',
      'create',
      '--path',
      'acme',
      '--name',
      'ACME Corp',
      '--visibility',
      'internal',
      '--json',
    ]);
    expect(group.json).toEqual({ id: 1, full_path: 'acme', name: 'ACME Corp', visibility: 'internal' });
    const sub = await run(['groups', 'create', '--path', 'platform', '--parent', 'acme', '--json']);
    expect(sub.json).toEqual({ id: 2, full_path: 'acme/platform', name: 'platform', visibility: 'private' });
    const project = await run([
      'projects',
      'create',
      '--path',
      'acme/platform/api',
      '--name',
      'Platform API',
      '--visibility',
      'private',
      '--json',
    ]);
    expect(project.json).toEqual({
      id: 1,
      path_with_namespace: 'acme/platform/api',
      name: 'Platform API',
      visibility: 'private',
    });
    const member = await run([
      'members',
      'add',
      '--group',
      'acme',
      '--user',
      'alice',
      '--access',
      'maintainer',
      '--json',
    ]);
    expect(member.json).toEqual({ source: 'group:acme', user: 'alice', access_level: 40 });
    const pm = await run([
      'members',
      'add',
      '--project',
      'acme/platform/api',
      '--user',
      'alice',
      '--access',
      'guest',
      '--json',
    ]);
    expect(pm.json).toEqual({ source: 'project:acme/platform/api', user: 'alice', access_level: 10 });
    // Adding again changes the level.
    expect(
      (await run(['members', 'add', '--group', 'acme', '--user', 'alice', '--access', 'owner', '--json'])).json
        .access_level,
    ).toBe(50);
    expect(await db.selectFrom('members').select(['access_level']).orderBy('id').execute()).toEqual([
      { access_level: 50 },
      { access_level: 10 },
    ]);
    expect((await run(['groups', 'create', '--path', 'x'])).out).toMatch(
      /^Created group x\.\nid: +\d+\nfull_path: +x\n/,
    );
  });

  it('refuse a missing parent group, bad visibility, bad access level, duplicates, and change nothing', async () => {
    await createAlice();
    await run(['groups', 'create', '--path', 'acme']);
    await run(['projects', 'create', '--path', 'acme/api']);
    await expectUserError(
      db,
      ['groups', 'create', '--path', 'sub', '--parent', 'missing'],
      /parent group "missing" not found/,
    );
    await expectUserError(db, ['groups', 'create', '--path', 'acme'], /group "acme" already exists/);
    await expectUserError(db, ['groups', 'create', '--path', 'api', '--parent', 'acme'], /already taken by a project/);
    await expectUserError(
      db,
      ['groups', 'create', '--path', 'g', '--visibility', 'secret'],
      /visibility "secret" is invalid/,
    );
    await expectUserError(db, ['groups', 'create', '--path', 'bad path'], /group path "bad path" is invalid/);
    await expectUserError(db, ['projects', 'create', '--path', 'missing/api'], /group "missing" not found/);
    await expectUserError(db, ['projects', 'create', '--path', 'noslash'], /must be NAMESPACE\/PATH/);
    await expectUserError(db, ['projects', 'create', '--path', 'acme/api'], /project "acme\/api" already exists/);
    await expectUserError(
      db,
      ['members', 'add', '--group', 'acme', '--user', 'alice', '--access', 'admin'],
      /access level "admin" is invalid/,
    );
    await expectUserError(
      db,
      ['members', 'add', '--group', 'acme', '--user', 'nobody', '--access', 'guest'],
      /user "nobody" not found/,
    );
    await expectUserError(
      db,
      ['members', 'add', '--group', 'missing', '--user', 'alice', '--access', 'guest'],
      /group "missing" not found/,
    );
    await expectUserError(
      db,
      ['members', 'add', '--project', 'acme/nope', '--user', 'alice', '--access', 'guest'],
      /project "acme\/nope" not found/,
    );
    await expectUserError(
      db,
      ['members', 'add', '--user', 'alice', '--access', 'guest'],
      /exactly one of group or project/,
    );
    await expectUserError(
      db,
      ['members', 'add', '--group', 'acme', '--project', 'acme/api', '--user', 'alice', '--access', 'guest'],
      /mutually exclusive/,
    );
  });
});

describe('groups, projects, members: list, delete, remove', () => {
  it('list what exists; delete and remove need --yes off a terminal, are audited, and refuse unknowns', async () => {
    await createAlice();
    await run(['users', 'create', '--username', 'bob', '--email', 'bob@example.com', '--password-stdin'], {
      stdin: PASSWORD,
    });
    for (const argv of [
      ['groups', 'create', '--path', 'acme', '--name', 'ACME Corp'],
      ['groups', 'create', '--path', 'platform', '--parent', 'acme'],
      // A public project needs a public group (a child is never more visible than its parent).
      ['groups', 'create', '--path', 'other', '--visibility', 'public'],
      ['projects', 'create', '--path', 'acme/platform/api'],
      ['projects', 'create', '--path', 'other/site', '--visibility', 'public'],
      ['members', 'add', '--group', 'acme', '--user', 'alice', '--access', 'maintainer'],
      ['members', 'add', '--group', 'acme', '--user', 'bob', '--access', 'reporter'],
      ['members', 'add', '--project', 'acme/platform/api', '--user', 'bob', '--access', 'developer'],
    ])
      expect((await run(argv)).code, argv.join(' ')).toBe(0);

    const groups = await run(['groups', 'list', '--json']);
    expect(groups.json).toEqual([
      { id: 1, full_path: 'acme', name: 'ACME Corp', visibility: 'private' },
      { id: 2, full_path: 'acme/platform', name: 'platform', visibility: 'private' },
      { id: 3, full_path: 'other', name: 'other', visibility: 'public' },
    ]);
    expect((await run(['groups', 'list'])).out).toBe(
      'ID  FULL PATH      NAME       VISIBILITY\n1   acme           ACME Corp  private\n2   acme/platform  platform   private\n3   other          other      public\n',
    );
    expect((await run(['projects', 'list', '--json'])).json).toEqual([
      { id: 1, path_with_namespace: 'acme/platform/api', name: 'api', visibility: 'private' },
      { id: 2, path_with_namespace: 'other/site', name: 'site', visibility: 'public' },
    ]);
    expect((await run(['projects', 'list', '--group', 'acme', '--json'])).json.map((p: any) => p.id)).toEqual([1]);
    expect((await run(['members', 'list', '--group', 'acme', '--json'])).json).toEqual([
      { source: 'group:acme', user: 'alice', access_level: 40 },
      { source: 'group:acme', user: 'bob', access_level: 20 },
    ]);
    expect((await run(['members', 'list', '--project', 'acme/platform/api'])).out).toBe(
      'USER  ACCESS LEVEL  SOURCE\nbob   30            project:acme/platform/api\n',
    );

    await expectUserError(db, ['projects', 'list', '--group', 'nope'], /group "nope" not found/);
    await expectUserError(db, ['members', 'list'], /give exactly one of group or project/);
    await expectUserError(db, ['members', 'remove', '--group', 'acme', '--user', 'bob'], /refusing without --yes/);
    await expectUserError(
      db,
      ['members', 'remove', '--group', 'other', '--user', 'bob', '--yes'],
      /bob is not a member of group:other/,
    );
    await expectUserError(db, ['members', 'remove', '--group', 'acme', '--user', 'nobody', '--yes'], /not found/);
    await expectUserError(db, ['groups', 'delete', 'acme'], /refusing without --yes/);
    await expectUserError(db, ['groups', 'delete', 'nope', '--yes'], /group "nope" not found/);
    await expectUserError(db, ['projects', 'delete', 'acme/nope', '--yes'], /project "acme\/nope" not found/);

    const removed = await run(['members', 'remove', '--group', 'acme', '--user', 'bob', '--yes', '--json']);
    expect(removed.json).toEqual({ source: 'group:acme', user: 'bob', access_level: 20 });
    expect((await run(['members', 'list', '--group', 'acme', '--json'])).json.map((m: any) => m.user)).toEqual([
      'alice',
    ]);
    const deletedProject = await run(['projects', 'delete', 'other/site', '--yes', '--json']);
    expect(deletedProject.json).toEqual({
      id: 2,
      path_with_namespace: 'other/site',
      name: 'site',
      visibility: 'public',
    });
    // A group takes its subgroups, their projects and memberships with it.
    const deletedGroup = await run(['groups', 'delete', 'acme', '--yes', '--json']);
    expect(deletedGroup.json).toEqual({ id: 1, full_path: 'acme', name: 'ACME Corp', visibility: 'private' });
    expect((await run(['groups', 'list', '--json'])).json.map((g: any) => g.full_path)).toEqual(['other']);
    expect((await run(['projects', 'list', '--json'])).json).toEqual([]);
    expect((await db.selectFrom('members').select('id').execute()).length).toBe(0);
    const audit = (await auditActions()).filter((a) => /\.(delete|remove)$/.test(a.action));
    expect(audit).toEqual([
      { actor: ACTOR, action: 'member.remove', details: { user: 'bob', access_level: 20 } },
      { actor: ACTOR, action: 'project.delete', details: { path_with_namespace: 'other/site' } },
      { actor: ACTOR, action: 'group.delete', details: { full_path: 'acme' } },
    ]);
  });
});

describe('audit list', () => {
  it('newest first, filtered by actor, action (or prefix), target and time, paged; bad paging refused', async () => {
    await createAlice();
    await run(['users', 'block', 'alice', '--yes']);
    await run(['users', 'unblock', 'alice']);
    await run(['groups', 'create', '--path', 'acme']);
    const all = await auditActions();
    const page1 = await run(['audit', 'list', '--per-page', '2', '--json']);
    expect(page1.code).toBe(0);
    expect(Object.keys(page1.json)).toEqual(['events', 'page', 'per_page', 'total']);
    expect(page1.json).toMatchObject({ page: 1, per_page: 2, total: all.length });
    expect(page1.json.events.map((e: any) => e.action)).toEqual(
      all
        .map((a) => a.action)
        .reverse()
        .slice(0, 2),
    );
    expect(Object.keys(page1.json.events[0])).toEqual([
      'id',
      'actor',
      'action',
      'target_type',
      'target_id',
      'details',
      'ip_address',
      'created_at',
    ]);
    const page2 = await run(['audit', 'list', '--per-page', '2', '--page', '2', '--json']);
    expect(page2.json.events.map((e: any) => e.action)).toEqual(
      all
        .map((a) => a.action)
        .reverse()
        .slice(2, 4),
    );
    const users = await run(['audit', 'list', '--action', 'user.', '--json']);
    expect(users.json.events.map((e: any) => e.action)).toEqual(
      all
        .map((a) => a.action)
        .filter((a) => a.startsWith('user.'))
        .reverse(),
    );
    const blocks = await run(['audit', 'list', '--action', 'user.block', '--actor', ACTOR, '--json']);
    expect(blocks.json.events).toHaveLength(1);
    expect(blocks.json.events[0]).toMatchObject({ actor: ACTOR, action: 'user.block', target_type: 'user' });
    expect((await run(['audit', 'list', '--actor', 'someone-else', '--json'])).json).toEqual({
      events: [],
      page: 1,
      per_page: 20,
      total: 0,
    });
    expect((await run(['audit', 'list', '--until', '2000-01-01', '--json'])).json.total).toBe(0);
    expect((await run(['audit', 'list', '--since', '2000-01-01', '--json'])).json.total).toBe(all.length);
    const human = await run(['audit', 'list', '--per-page', '1']);
    expect(human.out).toMatch(
      /^ID +TIME \(UTC\) +ACTOR +EVENT +DETAILS\n\d+ +\d{4}-\d\d-\d\d \d\d:\d\d +cli:test-operator +group\.create group +full_path="acme"\n +1 +visibility=/,
    );
    expect(human.out).toMatch(new RegExp(`\\n\\nPage 1 of ${all.length} \\(${all.length} events\\)\\.\\n$`));
    await expectUserError(db, ['audit', 'list', '--per-page', '101'], /per-page 101 is invalid \(1 to 100\)/);
    await expectUserError(db, ['audit', 'list', '--page', '0'], /page 0 is invalid/);
    await expectUserError(db, ['audit', 'list', '--since', 'last tuesday'], /since is not a date/);
  });
});

describe('secrets rotate session-key', () => {
  it('adds a signing key; the previous key keeps verifying', async () => {
    const before = await testKeyRing();
    const res = await run(['secrets', 'rotate', 'session-key', '--json']);
    expect(res).toMatchObject({ code: 0, err: '' });
    expect(res.json).toEqual({ rotated: true });
    const after = await testKeyRing();
    expect(after.signing.id).not.toBe(before.signing.id);
    expect(after.verifying.map((k) => k.id)).toContain(before.signing.id);
    expect((await auditActions()).map((a) => [a.actor, a.action])).toEqual([[ACTOR, 'service_key.rotate']]);
    expect((await run(['secrets', 'rotate', 'session-key'])).out).toMatch(/^Rotated the session key/);
  });

  it('uses the service it is given (the admin Lambda keeps the ring in Secrets Manager)', async () => {
    const calls: string[] = [];
    const res = await run(['secrets', 'rotate', 'session-key', '--json'], {
      services: {
        rotateSessionKey: async (_db, actor) => {
          calls.push(actor);
          return { rotated: true };
        },
      },
    });
    expect(res.json).toEqual({ rotated: true });
    expect(calls).toEqual([ACTOR]);
  });
});

describe('the command line itself', () => {
  it('every command has --help with an example', async () => {
    for (const command of COMMANDS) {
      const words = command.path.map((p) => p.split(' ')[0]);
      const help = await run([...words, '--help']);
      expect(help.code, words.join(' ')).toBe(0);
      expect(help.err).toBe('');
      expect(help.out).toContain(`lanyard-admin ${words.join(' ')}`);
      // Examples as whole lines: "# what it does", then the command, continued with " \" before an
      // option when it would pass 80 columns — never broken inside a word.
      const examples = help.out.split('\nExamples:\n')[1]?.split('\n\n')[0] ?? '';
      expect(examples, words.join(' ')).toMatch(/^ {2}# /);
      const shown: Array<{ what: string[]; lines: string[] }> = [];
      for (const l of examples.trimEnd().split('\n')) {
        if (l.startsWith('  # ')) {
          if (!shown.length || shown[shown.length - 1].lines.length) shown.push({ what: [], lines: [] });
          shown[shown.length - 1].what.push(l.slice(4));
        } else shown[shown.length - 1].lines.push(l);
      }
      expect(
        shown.map(({ what, lines }) => {
          for (const continued of lines.slice(1)) expect(continued).toMatch(/^ {2}--/);
          for (const line of lines.slice(0, -1)) expect(line).toMatch(/ \\$/);
          return [lines.map((l) => l.trim().replace(/ \\$/, '')).join(' '), what.join(' ')];
        }),
        words.join(' '),
      ).toEqual(command.examples.map(([line, what]) => [`lanyard-admin ${line}`, what]));
      for (const l of help.out.split('\n')) expect(l.length, `${words.join(' ')}: ${l}`).toBeLessThanOrEqual(80);
    }
    const top = await run(['--help']);
    for (const group of ['db', 'users', 'apps', 'tokens', 'groups', 'projects', 'members', 'secrets', 'audit'])
      expect(top.out).toMatch(new RegExp(`\\n {2}lanyard-admin ${group} +[A-Z]`));
  });

  it('usage errors exit 1 with one line; --json still prints one JSON document', async () => {
    for (const [argv, message] of [
      [[], /give a command/],
      [['frobnicate'], /Unknown argument: frobnicate/],
      [['users'], /give a users command/],
      [['users', 'show'], /Not enough non-option arguments/],
      [['users', 'list', '--bogus'], /Unknown argument: bogus/],
    ] as const) {
      await expectUserError(db, [...argv], message);
    }
    expect((await run(['users', 'create', '--username', 'x'])).err).toBe(
      'lanyard-admin: Missing required argument: email (see lanyard-admin users create --help)\n',
    );
  });

  it('an unexpected failure exits 2 with one line, and rolls the command back', async () => {
    await createAlice();
    const before = await fingerprint(db);
    const res = await run(['secrets', 'rotate', 'session-key', '--json'], {
      services: {
        rotateSessionKey: async (trx) => {
          await trx.updateTable('users').set({ name: 'changed' }).execute();
          throw new TypeError('cannot read properties of undefined');
        },
      },
    });
    expect(res.code).toBe(2);
    expect(res.err).toBe('lanyard-admin: unexpected error: cannot read properties of undefined\n');
    expect(res.json).toEqual({ error: 'unexpected error: cannot read properties of undefined' });
    expect(await fingerprint(db)).toEqual(before);
  });

  it('--function/--stack are refused where no transport is wired (inside the admin function)', async () => {
    await expectUserError(db, ['users', 'list', '--function', 'lanyard-admin'], /cannot be used here/);
  });

  it('each command runs in one transaction: audit event and change commit together', async () => {
    await createAlice();
    // The audit insert fails after the block's UPDATE: the block must not stick.
    await sql`create or replace function fail_audit() returns trigger language plpgsql as $$ begin raise exception 'audit down'; end $$`.execute(
      db,
    );
    await sql`create trigger fail_audit before insert on audit_events for each row execute function fail_audit()`.execute(
      db,
    );
    try {
      const res = await run(['users', 'block', 'alice', '--yes', '--json']);
      expect(res.code).toBe(2);
      expect((await findUserByUsername(db, 'alice'))!.state).toBe('active');
    } finally {
      await sql`drop trigger fail_audit on audit_events`.execute(db);
    }
  });
});

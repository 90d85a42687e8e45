// Every admin command as a real subprocess (`node bin/lanyard-admin.cjs`, what `npx lanyard-admin`
// runs) against PostgreSQL through DATABASE_URL: stdout JSON, stderr, exit codes, and nothing
// changed by a failed command. Subprocesses hash passwords at the real cost (~0.4 s each), so the
// commands run once each, in one scripted session per area.
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { createAdminHandler } from '../../admin-cli/function/admin-handler';
import type { Db } from '../../service/db/schema';
import { checkApplicationSecret } from '../../service/domain/applications';
import { fileKeyRingSource } from '../../service/local/service-key-file';
import { testHome } from '../support/app';
import { findUserByUsername } from '../../service/domain/users';
import { createTestDatabase } from '../support/db';
import { fingerprint, withJson } from './support';

const ROOT = path.resolve(__dirname, '..', '..');
const BIN = path.join(ROOT, 'bin', 'lanyard-admin.cjs');
const PASSWORD = 'correct horse battery staple';
// ~0.3 s of CPU per subprocess (tsx, pg) and the real password-hash cost; generous for a busy CI box.
const SLOW = 180_000;

let db: Db;
let url: string;
beforeAll(async () => {
  ({ db, url } = await createTestDatabase());
});

function lanyardAdmin(args: string[], options: { stdin?: string; env?: NodeJS.ProcessEnv } = {}) {
  return new Promise<{ code: number | null; out: string; err: string; json: any }>((resolve, reject) => {
    const env = {
      ...process.env,
      DATABASE_URL: url,
      LANYARD_HOME: testHome(),
      ...options.env,
    };
    const child = spawn(process.execPath, [BIN, ...args], { cwd: ROOT, env, stdio: ['pipe', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => (err += d));
    child.on('error', reject);
    child.on('close', (code) => resolve(withJson({ code, out, err }) as any));
    child.stdin.end(options.stdin ?? '');
  });
}

/** A failed command: exit 1, one line on stderr, {"error"} on stdout, no row changed. */
async function fails(args: string[], message: RegExp, options: { stdin?: string } = {}) {
  const before = await fingerprint(db);
  const res = await lanyardAdmin([...args, '--json'], options);
  expect(res.code, res.err).toBe(1);
  expect(res.err).toMatch(/^lanyard-admin: [^\n]+\n$/);
  expect(res.err).toMatch(message);
  expect(res.json).toEqual({
    error: res.err
      .slice('lanyard-admin: '.length)
      .trimEnd()
      .replace(/ \(see .* --help\)$/, ''),
  });
  expect(await fingerprint(db)).toEqual(before);
}

async function ok(args: string[], options: { stdin?: string; env?: NodeJS.ProcessEnv } = {}) {
  const res = await lanyardAdmin(args, options);
  expect(res.err).toBe('');
  expect(res.code).toBe(0);
  return res;
}

describe('lanyard-admin as a subprocess', () => {
  it(
    '--version prints the package version and touches no database',
    async () => {
      const { version } = JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8'));
      expect(version).toMatch(/^\d+\.\d+\.\d+/);
      // An unreachable database: --version must not need one.
      const env = { DATABASE_URL: 'postgres://nobody@127.0.0.1:1/none' };
      expect(await lanyardAdmin(['--version'], { env })).toMatchObject({ code: 0, out: `${version}\n`, err: '' });
    },
    SLOW,
  );

  it(
    'db and users',
    async () => {
      const status = await ok(['db', 'status', '--json']);
      expect(Object.keys(status.json)).toEqual(['applied', 'pending']);
      expect((await ok(['db', 'migrate', '--json'])).json).toEqual({ applied: status.json.applied, pending: [] });

      const created = await ok(
        ['users', 'create', '--username', 'alice', '--email', 'alice@example.com', '--password-stdin', '--json'],
        { stdin: `${PASSWORD}\n` },
      );
      expect(created.json).toEqual({
        id: 1,
        username: 'alice',
        email: 'alice@example.com',
        name: 'alice',
        is_admin: false,
        two_factor_enabled: false,
      });
      await fails(
        ['users', 'create', '--username', 'alice', '--email', 'other@example.com', '--password-stdin'],
        /username has already been taken/,
        { stdin: PASSWORD },
      );
      await fails(
        ['users', 'create', '--username', 'bob', '--email', 'bob@', '--password-stdin'],
        /email "bob@" is invalid/,
        { stdin: PASSWORD },
      );

      expect((await ok(['users', 'list'])).out).toMatch(
        /^ID +USERNAME +NAME +EMAIL +STATE +ADMIN +2FA\n1 +alice +alice +alice@example\.com +active +no +no\n$/,
      );
      expect((await ok(['users', 'show', 'alice', '--json'])).json).toMatchObject({
        username: 'alice',
        state: 'active',
        emails: [],
      });
      await fails(['users', 'show', 'nobody'], /user "nobody" not found/);

      expect((await ok(['users', 'add-email', 'alice', 'alice@work.example', '--json'])).json.emails).toEqual([
        'alice@work.example',
      ]);

      await ok(['users', 'set-password', 'alice', '--password-stdin', '--json'], { stdin: 'another long password\n' });
      const { verifyPassword } = await import('../../service/domain/passwords.js');
      expect(
        await verifyPassword('another long password', (await findUserByUsername(db, 'alice'))!.password_hash),
      ).toBe(true);

      const twoFa = await ok(['users', 'set-2fa', 'alice', 'on', '--json']);
      expect(Object.keys(twoFa.json)).toEqual([
        'username',
        'two_factor_enabled',
        'otp_secret',
        'otpauth_uri',
        'recovery_codes',
      ]);
      expect(twoFa.json.otpauth_uri).toMatch(/^otpauth:\/\/totp\/Lanyard%3Aalice%40example\.com\?secret=[A-Z2-7]+&/);
      // stdout is a pipe here: the otpauth URI, and no QR code.
      const piped = await ok(['users', 'set-2fa', 'alice', 'on']);
      expect(piped.out).toMatch(/^Two-factor authentication is on for alice\. Add it to an authenticator app:\n/);
      expect(piped.out).toContain('otpauth://totp/');
      expect(piped.out).not.toMatch(/[▀▄█]/);
      expect((await ok(['users', 'set-2fa', 'alice', 'off'])).out).toBe(
        'Two-factor authentication is off for alice.\n',
      );

      await fails(['users', 'block', 'alice'], /refusing without --yes \(not on a terminal\)/);
      expect((await ok(['users', 'block', 'alice', '--yes', '--json'])).json.state).toBe('blocked');
      expect((await ok(['users', 'unblock', 'alice', '--json'])).json.state).toBe('active');
    },
    SLOW,
  );

  it(
    'apps and tokens',
    async () => {
      const reg = await ok([
        'apps',
        'register',
        '--name',
        'CI',
        '--redirect-uri',
        'https://ci.example.com/cb',
        '--scopes',
        'api read_user',
        '--json',
      ]);
      expect(Object.keys(reg.json)).toEqual([
        'id',
        'application_id',
        'application_name',
        'secret',
        'callback_url',
        'scopes',
        'confidential',
        'trusted',
      ]);
      await fails(
        ['apps', 'register', '--name', 'X', '--redirect-uri', 'javascript:alert(document.cookie)'],
        /forbidden scheme \(javascript:\)/,
      );
      await fails(
        ['apps', 'register', '--name', 'X', '--redirect-uri', 'https://x.example/cb#top'],
        /must not contain a fragment/,
      );
      await fails(
        [
          'apps',
          'register',
          '--name',
          'X',
          '--redirect-uri',
          'https://x.example/cb',
          '--scopes',
          'api write_repository',
        ],
        /unknown scope: write_repository/,
      );

      const list = await ok(['apps', 'list', '--json']);
      expect(list.json).toHaveLength(1);
      expect(list.out).not.toContain(reg.json.secret);
      expect((await ok(['apps', 'show', reg.json.application_id, '--json'])).json).toEqual(list.json[0]);
      const rotated = await ok(['apps', 'rotate-secret', reg.json.application_id, '--json']);
      expect(rotated.json).toEqual({
        application_id: reg.json.application_id,
        secret: expect.stringMatching(/^gloas-[0-9a-f]{64}$/),
      });
      expect(
        (
          await checkApplicationSecret(db, {
            uid: reg.json.application_id,
            secret: reg.json.secret,
            address: '192.0.2.1',
          })
        ).ok,
      ).toBe(false);
      expect(
        (
          await checkApplicationSecret(db, {
            uid: reg.json.application_id,
            secret: rotated.json.secret,
            address: '192.0.2.1',
          })
        ).ok,
      ).toBe(true);

      const token = await ok(['tokens', 'create', '--user', 'alice', '--name', 'ci', '--scopes', 'read_api', '--json']);
      expect(token.json).toEqual({
        id: 1,
        name: 'ci',
        token: expect.stringMatching(/^glpat-/),
        scopes: ['read_api'],
        expires_at: expect.stringMatching(/^\d{4}-\d{2}-\d{2}$/),
        user: 'alice',
      });
      const tokens = await ok(['tokens', 'list', '--user', 'alice', '--json']);
      expect(tokens.json).toMatchObject([{ id: 1, active: true }]);
      expect(tokens.out).not.toContain(token.json.token);
      expect((await ok(['tokens', 'revoke', '1', '--yes', '--json'])).json).toMatchObject({
        id: 1,
        revoked: true,
        active: false,
      });

      expect((await ok(['apps', 'delete', reg.json.application_id, '--yes', '--json'])).json.application_id).toBe(
        reg.json.application_id,
      );
    },
    SLOW,
  );

  it(
    'groups, projects, members, secrets',
    async () => {
      expect((await ok(['groups', 'create', '--path', 'acme', '--visibility', 'internal', '--json'])).json).toEqual({
        id: 1,
        full_path: 'acme',
        name: 'acme',
        visibility: 'internal',
      });
      await fails(['groups', 'create', '--path', 'sub', '--parent', 'missing'], /parent group "missing" not found/);
      expect(
        (await ok(['projects', 'create', '--path', 'acme/api', '--visibility', 'internal', '--json'])).json,
      ).toEqual({ id: 1, path_with_namespace: 'acme/api', name: 'api', visibility: 'internal' });
      expect(
        (await ok(['members', 'add', '--project', 'acme/api', '--user', 'alice', '--access', 'developer', '--json']))
          .json,
      ).toEqual({ source: 'project:acme/api', user: 'alice', access_level: 30 });
      await fails(
        ['members', 'add', '--group', 'acme', '--user', 'alice', '--access', 'superuser'],
        /access level "superuser" is invalid/,
      );

      const before = await fileKeyRingSource(testHome()).load();
      expect((await ok(['secrets', 'rotate', 'session-key', '--json'])).json).toEqual({ rotated: true });
      expect((await fileKeyRingSource(testHome()).load()).verifying.map((k) => k.id)).toContain(before.signing.id);

      // Every change above was audited under the operator's OS identity.
      const actors = await db.selectFrom('audit_events').select('actor').distinct().execute();
      expect(actors.map((a) => a.actor)).toEqual([expect.stringMatching(/^cli:.+/)]);
    },
    SLOW,
  );

  it(
    '--help, usage errors and an unreachable database',
    async () => {
      const help = await ok(['apps', 'register', '--help']);
      expect(help.out).toMatch(/^lanyard-admin apps register\n/);
      expect(help.out).toMatch(/\nExamples:\n {2}# [^\n]+\n {2}lanyard-admin apps register --name/);
      // As operators type it in the repository: npx finds the package's own bin.
      const viaNpx = await new Promise<{ code: number | null; out: string }>((resolve, reject) => {
        const child = spawn('npx', ['--no', 'lanyard-admin', 'db', '--help'], {
          cwd: ROOT,
          env: process.env,
          stdio: ['ignore', 'pipe', 'ignore'],
        });
        let out = '';
        child.stdout.on('data', (d) => (out += d));
        child.on('error', reject);
        child.on('close', (code) => resolve({ code, out }));
      });
      expect(viaNpx.code).toBe(0);
      expect(viaNpx.out).toMatch(/^lanyard-admin db <command>\n/);
      const usage = await lanyardAdmin(['apps', 'frobnicate']);
      expect(usage).toMatchObject({
        code: 1,
        out: '',
        err: 'lanyard-admin: Unknown argument: frobnicate (see lanyard-admin apps --help)\n',
      });
      const down = await lanyardAdmin(['users', 'list', '--json'], {
        env: { DATABASE_URL: 'postgres://lanyard:x@127.0.0.1:1/lanyard' },
      });
      expect(down).toMatchObject({
        code: 1,
        err: 'lanyard-admin: cannot connect to 127.0.0.1:1/lanyard: connection refused (is PostgreSQL running?)\n',
      });
      expect(down.json).toEqual({
        error: 'cannot connect to 127.0.0.1:1/lanyard: connection refused (is PostgreSQL running?)',
      });
    },
    SLOW,
  );

  it(
    '--function: the real SDK in the subprocess reaches a stand-in Lambda endpoint that runs the admin handler',
    async () => {
      const handler = createAdminHandler({ db, log: () => undefined });
      const seen: any[] = [];
      const server = http.createServer((req, res) => {
        let body = '';
        req.on('data', (d) => (body += d));
        req.on('end', async () => {
          if (req.url === '/') {
            // STS GetCallerIdentity (query protocol, XML)
            res.writeHead(200, { 'content-type': 'text/xml' });
            res.end(
              '<GetCallerIdentityResponse><GetCallerIdentityResult><Arn>arn:aws:iam::123456789012:role/ops</Arn></GetCallerIdentityResult></GetCallerIdentityResponse>',
            );
            return;
          }
          seen.push({ url: req.url, authorization: req.headers.authorization, payload: JSON.parse(body) });
          const result = await handler(JSON.parse(body), { awsRequestId: 'req-subprocess' });
          res.writeHead(200, { 'content-type': 'application/json' });
          res.end(JSON.stringify(result));
        });
      });
      await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
      const endpoint = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
      const env = {
        DATABASE_URL: 'postgres://unused:x@127.0.0.1:1/never-opened',
        AWS_ENDPOINT_URL_LAMBDA: endpoint,
        AWS_ENDPOINT_URL_STS: endpoint,
        AWS_ACCESS_KEY_ID: 'AKIDEXAMPLE',
        AWS_SECRET_ACCESS_KEY: 'secret',
        AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true',
      };
      try {
        const created = await ok(
          [
            'users',
            'create',
            '--username',
            'remote',
            '--email',
            'remote@example.com',
            '--password-stdin',
            '--json',
            '--function',
            'lanyard-prod-admin',
            '--region',
            'eu-central-1',
          ],
          { stdin: `${PASSWORD}\n`, env },
        );
        expect(created.json).toMatchObject({ username: 'remote' });
        expect(seen[0]).toMatchObject({
          url: '/2015-03-31/functions/lanyard-prod-admin/invocations',
          authorization: expect.stringMatching(
            /^AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE\/\d{8}\/eu-central-1\/lambda\/aws4_request/,
          ),
          payload: {
            argv: [
              'users',
              'create',
              '--username',
              'remote',
              '--email',
              'remote@example.com',
              '--json',
              '--password-stdin',
            ],
            stdin: PASSWORD,
            actor: 'arn:aws:iam::123456789012:role/ops',
          },
        });
        const dup = await lanyardAdmin(
          [
            'users',
            'create',
            '--username',
            'remote',
            '--email',
            'r2@example.com',
            '--password-stdin',
            '--function',
            'lanyard-prod-admin',
            '--region',
            'eu-central-1',
          ],
          { stdin: PASSWORD, env },
        );
        expect(dup).toMatchObject({ code: 1, out: '', err: 'lanyard-admin: username has already been taken\n' });
        const audit = await db
          .selectFrom('audit_events')
          .select(['actor', 'action'])
          .where('action', '=', 'admin.command')
          .execute();
        expect(audit).toEqual([
          { actor: 'arn:aws:iam::123456789012:role/ops', action: 'admin.command' },
          { actor: 'arn:aws:iam::123456789012:role/ops', action: 'admin.command' },
        ]);
      } finally {
        await new Promise((r) => server.close(r));
      }
    },
    SLOW,
  );
});

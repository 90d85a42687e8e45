// The remote path end to end, in-process: the CLI parses and gathers inputs on the operator's side,
// the real LambdaClient signs an Invoke request (stubbed at the HTTP boundary), the real admin
// function entry (admin-cli/function/handler.ts) runs the same command code against PostgreSQL, and the
// CLI prints what it returned.
import { chmodSync, mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { runCli } from '../../admin-cli/cli';
import { createAdminHandler } from '../../admin-cli/function/admin-handler';
import { secretSessionKeyService } from '../../admin-cli/function/session-keys';
import { secretsManagerStore } from '../../service/aws/secret-store';
import { ensureKeyRingSecret } from '../../service/aws/session-key-ring';
import { parseKeyRingDocument } from '../../service/domain/service-keys';
import { startFakeSecretsManager } from '../lambda/fake-secrets-manager';
import { bufferedIo } from '../../admin-cli/io';
import { lambdaTransport } from '../../admin-cli/remote';
import type { AdminInvocationResult } from '../../admin-cli/function/protocol';
import type { Db } from '../../service/db/schema';
import { findUserByUsername } from '../../service/domain/users';
import { verifyPassword } from '../../service/domain/passwords';
import { createTestDatabase, resetDatabase } from '../support/db';
import { CALLER_ARN, fakeAws } from './fake-aws';
import { fingerprint, withJson } from './support';

let db: Db;
let handler: (event: unknown, context?: { awsRequestId?: string }) => Promise<AdminInvocationResult>;
let aws: ReturnType<typeof fakeAws>;

beforeAll(async () => {
  const testDb = await createTestDatabase();
  db = testDb.db;
  // The deployed entry reads its database like the API function does; here: DATABASE_URL.
  process.env.DATABASE_URL = testDb.url;
  process.env.LOG_LEVEL = 'silent';
  ({ handler } = await import('../../admin-cli/function/handler.js'));
  aws = fakeAws((event, context) => handler(event, context));
});
beforeEach(async () => {
  await resetDatabase(db);
  aws.requests.length = 0;
  aws.payloads.length = 0;
});

const PASSWORD = 'correct horse battery staple';

async function remote(
  argv: string[],
  options: { stdin?: string; answers?: string[]; env?: NodeJS.ProcessEnv; pulumiCwd?: string } = {},
) {
  const io = bufferedIo({ stdin: options.stdin, answers: options.answers });
  const code = await runCli(argv, {
    io,
    env: options.env ?? { PATH: process.env.PATH },
    actor: 'cli:should-not-be-used-remotely',
    // A local target that must never be opened: remote commands do not touch a local database.
    target: {
      db: async () => Promise.reject(new Error('the local database was opened')),
      close: async () => undefined,
    },
    remote: lambdaTransport({ clientConfig: aws.clientConfig as any, pulumiCwd: options.pulumiCwd }),
  });
  return withJson({ code, out: io.out, err: io.err });
}
const audit = () =>
  db.selectFrom('audit_events').select(['actor', 'action', 'target_id', 'details']).orderBy('id').execute();

describe('--function', () => {
  it('sends the command to the admin function and prints its result; the password travels as stdin', async () => {
    const res = await remote(
      [
        'users',
        'create',
        '--username',
        'alice',
        '--email',
        'alice@example.com',
        '--password-stdin',
        '--json',
        '--function',
        'lanyard-prod-admin',
        '--region',
        'eu-west-1',
      ],
      { stdin: `${PASSWORD}\n` },
    );
    expect(res.err).toBe('');
    expect(res.code).toBe(0);
    expect(res.json).toEqual({
      id: 1,
      username: 'alice',
      email: 'alice@example.com',
      name: 'alice',
      is_admin: false,
      two_factor_enabled: false,
    });
    expect(await verifyPassword(PASSWORD, (await findUserByUsername(db, 'alice'))!.password_hash)).toBe(true);
    // What went over the wire: a SigV4-signed RequestResponse Invoke, then STS for the caller.
    const invoke = aws.requests.find((r) => r.hostname.startsWith('lambda.'))!;
    expect(invoke).toMatchObject({
      method: 'POST',
      hostname: 'lambda.eu-west-1.amazonaws.com',
      path: '/2015-03-31/functions/lanyard-prod-admin/invocations',
    });
    expect(invoke.headers['x-amz-invocation-type']).toBe('RequestResponse');
    expect(invoke.headers.authorization).toMatch(
      /^AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE\/\d{8}\/eu-west-1\/lambda\/aws4_request/,
    );
    expect(aws.payloads).toEqual([
      {
        argv: ['users', 'create', '--username', 'alice', '--email', 'alice@example.com', '--json', '--password-stdin'],
        stdin: PASSWORD,
        actor: CALLER_ARN,
      },
    ]);
    // The function audits the command as the IAM caller, with the request id; never the password.
    const events = await audit();
    expect(events.map((e) => [e.actor, e.action])).toEqual([
      [CALLER_ARN, 'user.create'],
      [CALLER_ARN, 'admin.command'],
    ]);
    expect(events[1]).toMatchObject({
      target_id: 'users create',
      // The ARN is the CLI's claim; CloudTrail's Invoke record with this request id verifies it.
      details: {
        exit_code: 0,
        request_id: 'req-1',
        via: 'admin-function',
        claimed_actor: CALLER_ARN,
        actor_verified: false,
        verified_by: 'cloudtrail-invoke-record',
      },
    });
    expect(JSON.stringify(events)).not.toContain(PASSWORD);
  });

  it('--password is warned about locally and never forwarded in argv', async () => {
    const res = await remote([
      'users',
      'create',
      '--username',
      'bob',
      '--email',
      'bob@example.com',
      `--password=${PASSWORD}`,
      '--function',
      'fn',
    ]);
    expect(res.code).toBe(0);
    expect(res.err).toMatch(/^lanyard-admin: warning: --password leaves the password in your shell history/);
    expect(res.out).toMatch(/^Created user bob\./);
    expect(aws.payloads[0].argv).toEqual([
      'users',
      'create',
      '--username',
      'bob',
      '--email',
      'bob@example.com',
      '--password-stdin',
    ]);
    expect(aws.payloads[0].stdin).toBe(PASSWORD);
  });

  it('a destructive command is confirmed on the operator side: refused off a terminal, forwarded with --yes once confirmed', async () => {
    await remote(
      ['users', 'create', '--username', 'carol', '--email', 'c@example.com', '--password-stdin', '--function', 'fn'],
      { stdin: PASSWORD },
    );
    aws.payloads.length = 0;
    const refused = await remote(['users', 'block', 'carol', '--function', 'fn']);
    expect(refused.code).toBe(1);
    expect(refused.err).toBe('lanyard-admin: Block user carol: refusing without --yes (not on a terminal)\n');
    expect(aws.payloads).toEqual([]);
    const confirmed = await remote(['users', 'block', 'carol', '--function', 'fn', '--json'], { answers: ['yes'] });
    expect(confirmed.code).toBe(0);
    expect(confirmed.json.state).toBe('blocked');
    expect(aws.payloads[0].argv).toEqual(['users', 'block', 'carol', '--json', '--yes']);
  });

  it("a user error in the function comes back as the CLI's: exit 1, one line, nothing changed", async () => {
    await remote(['groups', 'create', '--path', 'acme', '--function', 'fn']);
    const before = await fingerprint(db);
    const res = await remote([
      'groups',
      'create',
      '--path',
      'sub',
      '--parent',
      'missing',
      '--json',
      '--function',
      'fn',
    ]);
    expect(res.code).toBe(1);
    expect(res.err).toBe('lanyard-admin: parent group "missing" not found\n');
    expect(res.json).toEqual({ error: 'parent group "missing" not found' });
    const after = await fingerprint(db);
    // Only the function's own audit event of the failed attempt was added.
    expect({ ...after, audit_events: '' }).toEqual({ ...before, audit_events: '' });
    expect((await audit()).at(-1)).toMatchObject({ action: 'admin.command', details: { exit_code: 1 } });
  });

  it('takes the region from a function ARN', async () => {
    const res = await remote([
      'db',
      'status',
      '--json',
      '--function',
      'arn:aws:lambda:us-east-2:123456789012:function:lanyard-admin',
    ]);
    expect(res.code).toBe(0);
    expect(res.json.pending).toEqual([]);
    expect(aws.requests.find((r) => r.hostname.startsWith('lambda.'))).toMatchObject({
      hostname: 'lambda.us-east-2.amazonaws.com',
      path: `/2015-03-31/functions/${encodeURIComponent('arn:aws:lambda:us-east-2:123456789012:function:lanyard-admin')}/invocations`,
    });
  });

  it('AWS failures: unknown function or no permission → exit 1 with one line; a crashed function → exit 2', async () => {
    const missing = await remote(['users', 'list', '--function', 'lanyard-missing']);
    expect(missing).toMatchObject({
      code: 1,
      out: '',
      err: 'lanyard-admin: the admin function lanyard-missing (eu-west-1) does not exist\n',
    });
    const denied = await remote(['users', 'list', '--json', '--function', 'lanyard-denied']);
    expect(denied.code).toBe(1);
    expect(denied.err).toMatch(
      /^lanyard-admin: not allowed to invoke lanyard-denied \(eu-west-1\): User: arn:aws:iam::123456789012:user\/operator is not authorized to perform: lambda:InvokeFunction/,
    );
    expect(denied.json.error).toMatch(/^not allowed to invoke/);
    const broken = await remote(['users', 'list', '--function', 'lanyard-broken']);
    expect(broken).toMatchObject({
      code: 2,
      err: "lanyard-admin: unexpected error: the admin function failed: Runtime.ImportModuleError: Cannot find module 'index'\n",
    });
  });

  it('usage errors and --help are answered locally, without invoking anything', async () => {
    expect((await remote(['users', 'create', '--function', 'fn'])).code).toBe(1);
    expect((await remote(['users', '--help', '--function', 'fn'])).out).toContain('lanyard-admin users <command>');
    expect((await remote(['users', 'list', '--function', 'fn', '--stack', 'prod'])).err).toBe(
      'lanyard-admin: give --function or --stack, not both (see lanyard-admin users list --help)\n',
    );
    expect(aws.requests).toEqual([]);
  });
});

describe('--stack', () => {
  const fakePulumi = (script: string) => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'lanyard-pulumi-'));
    writeFileSync(path.join(dir, 'pulumi'), `#!/bin/sh\n${script}\n`);
    chmodSync(path.join(dir, 'pulumi'), 0o755);
    return { PATH: `${dir}:${process.env.PATH}` };
  };

  it('resolves adminFunctionName from `pulumi stack output --json --stack NAME` (and the region from the stack config)', async () => {
    const env = fakePulumi(
      'if [ "$1 $2 $3 $4 $5" = "stack output --json --stack prod" ]; then echo \'{"apiUrl":"https://x","adminFunctionName":"lanyard-prod-admin"}\'; exit 0; fi\n' +
        'if [ "$1 $2 $3 $4 $5" = "config get aws:region --stack prod" ]; then echo ap-southeast-2; exit 0; fi\nexit 3',
    );
    const res = await remote(['tokens', 'list', '--json', '--stack', 'prod'], { env });
    expect(res.err).toBe('');
    expect(res).toMatchObject({ code: 0 });
    expect(res.json).toEqual([]);
    expect(aws.requests.find((r) => r.hostname.startsWith('lambda.'))).toMatchObject({
      hostname: 'lambda.ap-southeast-2.amazonaws.com',
      path: '/2015-03-31/functions/lanyard-prod-admin/invocations',
    });
    expect(aws.payloads[0].argv).toEqual(['tokens', 'list', '--json']);
  });

  it('fails with one clear line when the Pulumi CLI is missing, fails, or the stack has no admin function', async () => {
    const noPulumi = await remote(['users', 'list', '--stack', 'prod'], { env: { PATH: '/nonexistent' } });
    expect(noPulumi).toMatchObject({
      code: 1,
      err: "lanyard-admin: --stack needs the Pulumi CLI, which is not installed here; pass --function with the stack's adminFunctionName output instead\n",
    });
    const failing = await remote(['users', 'list', '--stack', 'nope'], {
      env: fakePulumi('echo "error: no stack named \'nope\' found" >&2; exit 255'),
    });
    expect(failing).toMatchObject({
      code: 1,
      err: "lanyard-admin: pulumi stack output --stack nope failed: no stack named 'nope' found\n",
    });
    const noOutput = await remote(['users', 'list', '--stack', 'dev'], {
      env: fakePulumi('echo \'{"apiUrl":"https://x"}\''),
    });
    expect(noOutput).toMatchObject({
      code: 1,
      err: 'lanyard-admin: the stack "dev" has no adminFunctionName output (is it deployed with the admin function?)\n',
    });
    expect(aws.requests).toEqual([]);
  });
});

describe('the admin function handler', () => {
  it('answers a malformed payload with exit 1 and refuses to forward again', async () => {
    expect(await handler({ argv: 'users list' })).toEqual({
      exitCode: 1,
      stdout: '',
      stderr: 'lanyard-admin: invalid admin payload: "argv" must be an array of strings\n',
    });
    expect(await handler(null)).toMatchObject({ exitCode: 1 });
    const nested = await handler({ argv: ['users', 'list', '--function', 'other'] });
    expect(nested).toEqual({
      exitCode: 1,
      stdout: '',
      stderr:
        '--function and --stack cannot be used here (inside the admin function) (see lanyard-admin users list --help)\n'.replace(
          /^/,
          'lanyard-admin: ',
        ),
    });
  });

  it('audits every invocation (reads included) without a password, even one put in argv', async () => {
    const res = await handler(
      {
        argv: ['users', 'create', '--username', 'dan', '--email', 'dan@example.com', '--password', PASSWORD, '--json'],
      },
      { awsRequestId: 'abc-123' },
    );
    expect(res.exitCode).toBe(0);
    expect(JSON.parse(res.stdout)).toMatchObject({ username: 'dan' });
    expect((await handler({ argv: ['users', 'list'] })).stdout).toMatch(/^ID +USERNAME/);
    const events = await audit();
    expect(events.map((e) => [e.actor, e.action, e.target_id])).toEqual([
      ['admin-function', 'user.create', expect.any(String)],
      ['admin-function', 'admin.command', 'users create'],
      ['admin-function', 'admin.command', 'users list'],
    ]);
    expect(events[1].details).toEqual({
      argv: [
        'users',
        'create',
        '--username',
        'dan',
        '--email',
        'dan@example.com',
        '--password',
        '[redacted]',
        '--json',
      ],
      exit_code: 0,
      request_id: 'abc-123',
      via: 'admin-function',
      // No actor was sent: nothing claimed, and the function cannot verify a caller itself.
      claimed_actor: null,
      actor_verified: false,
      verified_by: 'cloudtrail-invoke-record',
    });
    expect(JSON.stringify(events)).not.toContain(PASSWORD);
  });

  it('deployed with a key ring secret, secrets rotate session-key rotates the secret (not the database) and audits it', async () => {
    const RING = 'arn:aws:secretsmanager:eu-west-1:123456789012:secret:lanyard-session-keys-AbCdEf';
    const fake = await startFakeSecretsManager({ [RING]: undefined });
    try {
      const store = secretsManagerStore({
        region: 'eu-west-1',
        credentials: { accessKeyId: 'AKID', secretAccessKey: 's' },
        endpoint: fake.url,
      });
      await ensureKeyRingSecret(store, RING);
      const before = parseKeyRingDocument(fake.secrets.get(RING)!);
      const deployed = createAdminHandler({
        db,
        services: { rotateSessionKey: secretSessionKeyService(store, RING) },
        log: () => undefined,
      });
      const res = await deployed(
        { argv: ['secrets', 'rotate', 'session-key', '--json'], actor: CALLER_ARN },
        { awsRequestId: 'rot-1' },
      );
      expect(res).toEqual({ exitCode: 0, stdout: '{\n  "rotated": true\n}\n', stderr: '' });
      const after = parseKeyRingDocument(fake.secrets.get(RING)!);
      expect(after.signing.id).not.toBe(before.signing.id);
      expect(after.verifying.map((k) => k.id)).toEqual([after.signing.id, before.signing.id]);
      expect((await audit()).map((e) => [e.actor, e.action, e.target_id])).toEqual([
        [CALLER_ARN, 'service_key.rotate', after.signing.id],
        [CALLER_ARN, 'admin.command', 'secrets rotate session-key'],
      ]);
    } finally {
      await fake.close();
    }
  });
});

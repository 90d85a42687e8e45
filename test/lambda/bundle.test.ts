// The BUILT bundles (not the sources): built once for this file with the deploy's build script,
// held to the size budget, deterministic, shipped with the RDS CAs, and answering Lambda events
// locally against real PostgreSQL — the API function through API Gateway HTTP API v2 events, the
// migration function as the deploy invokes it, the admin function as `lanyard-admin --stack` does.
import { X509Certificate } from 'node:crypto';
import fs from 'node:fs';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { bundleLambdas, MAX_BUNDLE_BYTES, type BuiltBundle } from '../../infra/build/bundle';
import { RDS_CA_FILE_NAME } from '../../service/aws/rds-ca';
import { httpApiEvent, lambdaContext } from '../support/api-gateway';
import { createTestDatabase, type TestDatabase } from '../support/db';

// Outside the repository: with no node_modules above it, a dependency left out of a bundle fails
// to load here as it would on Lambda.
const outDir = fs.mkdtempSync(path.join(os.tmpdir(), 'lanyard-bundle-'));
let bundles: Record<string, BuiltBundle>;
let t: TestDatabase;
const nativeRequire = createRequire(__filename);

/** Load a built bundle in this process with the environment Lambda would give it. */
function loadBundle(
  name: string,
  env: Record<string, string>,
): { handler: (event: unknown, context?: unknown) => Promise<any> } {
  const saved = { ...process.env };
  Object.assign(process.env, env);
  try {
    return nativeRequire(path.join(outDir, name, 'index.js'));
  } finally {
    process.env = saved;
  }
}

beforeAll(async () => {
  bundles = Object.fromEntries((await bundleLambdas({ outDir })).map((b) => [b.name, b]));
  t = await createTestDatabase();
}, 120_000);
afterAll(() => fs.rmSync(outDir, { recursive: true, force: true }));

describe('the bundles', () => {
  it('are one file per function under 1 MB, with the RDS CA bundle beside it', () => {
    expect(Object.keys(bundles).sort()).toEqual(['admin', 'api', 'migrate']);
    for (const b of Object.values(bundles)) {
      const top = b.breakdown
        .slice(0, 8)
        .map(([pkg, bytes]) => `${pkg} ${(bytes / 1024).toFixed(0)} KiB`)
        .join(', ');
      expect(b.bytes, `${b.name}: ${b.bytes} bytes; largest parts: ${top}`).toBeLessThan(MAX_BUNDLE_BYTES);
      // index.js.LEGAL.txt only when a bundled package carries licence comments.
      expect(
        fs
          .readdirSync(b.dir)
          .filter((f) => f !== 'index.js.LEGAL.txt')
          .sort(),
      ).toEqual(['index.js', RDS_CA_FILE_NAME]);
    }
  });

  it('carry the Amazon RDS certificate authorities (current G1 roots of every region)', () => {
    const pem = fs.readFileSync(path.join(bundles.api.dir, RDS_CA_FILE_NAME), 'utf8');
    const certs = pem
      .match(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g)!
      .map((c) => new X509Certificate(c));
    expect(certs.length).toBeGreaterThan(100);
    const subjects = certs.map((c) => c.subject);
    for (const region of ['us-east-1', 'eu-west-1', 'ap-southeast-2']) {
      for (const kind of ['RSA2048 G1', 'RSA4096 G1', 'ECC384 G1']) {
        expect(subjects.some((s) => s.includes(`CN=Amazon RDS ${region} Root CA ${kind}`))).toBe(true);
      }
    }
    for (const c of certs) expect(c.ca).toBe(true);
  });

  it('are deterministic: the same sources build the same bytes', async () => {
    const again = fs.mkdtempSync(path.join(os.tmpdir(), 'lanyard-bundle-again-'));
    try {
      const second = await bundleLambdas({ outDir: again, entries: [{ name: 'api', source: 'service/lambda.ts' }] });
      expect(second[0].sha256).toBe(bundles.api.sha256);
      expect(fs.readFileSync(path.join(again, 'api', RDS_CA_FILE_NAME))).toEqual(
        fs.readFileSync(path.join(bundles.api.dir, RDS_CA_FILE_NAME)),
      );
    } finally {
      fs.rmSync(again, { recursive: true, force: true });
    }
  }, 60_000);
});

describe('the built functions against PostgreSQL', () => {
  const env = () => ({
    DATABASE_URL: t.url,
    LOG_LEVEL: 'silent',
    PUBLIC_URL: 'https://abc123.execute-api.eu-west-1.amazonaws.com',
  });
  let accessToken: string;

  it('migration function: applies pending migrations to an empty database, then reports', async () => {
    const empty = `lanyard_empty_${process.pid}_${Date.now()}`;
    const admin = new pg.Client({ connectionString: inject('pgAdminUrl') });
    await admin.connect();
    await admin.query(`create database ${empty}`);
    afterAll(async () => {
      await admin.query(`drop database if exists ${empty} with (force)`);
      await admin.end();
    });
    const url = new URL(inject('pgAdminUrl'));
    url.pathname = `/${empty}`;
    const { handler } = loadBundle('migrate', { DATABASE_URL: url.toString(), LOG_LEVEL: 'silent' });
    const first = await handler({ action: 'migrate' });
    expect(first.pending).toEqual([]);
    expect(first.applied).toContain('0001-initial-schema');
    expect(first.newlyApplied).toEqual(first.applied);
    expect(await handler({ action: 'migrate' })).toEqual({ applied: first.applied, pending: [], newlyApplied: [] });
    expect(await handler({ action: 'status' })).toEqual({ applied: first.applied, pending: [], newlyApplied: [] });

    // The same bundle's `prune` export (the scheduled retention function): purges and reports.
    const { prune } = loadBundle('migrate', {}) as unknown as { prune: (event: unknown) => Promise<unknown> };
    const client = new pg.Client({ connectionString: url.toString() });
    await client.connect();
    try {
      await client.query(
        `insert into web_sessions (id_digest, data, expires_at) values ('old', '{}', now() - interval '1 minute'), ('live', '{}', now() + interval '1 hour')`,
      );
      // Whatever the event holds, it only prunes.
      expect(await prune({ action: 'migrate' })).toEqual({
        dryRun: false,
        deleted: {
          web_sessions: 1,
          oauth_access_tokens: 0,
          oauth_authorization_codes: 0,
          rate_limit_counters: 0,
          audit_events: 0,
        },
        total: 1,
      });
      expect((await client.query('select id_digest from web_sessions')).rows).toEqual([{ id_digest: 'live' }]);
      expect((await client.query(`select actor from audit_events where action = 'db.prune'`)).rows).toEqual([
        { actor: 'system:retention-schedule' },
      ]);
    } finally {
      await client.end();
    }
  });

  it('admin function: creates a user and an application as `lanyard-admin --stack` would', async () => {
    const { handler } = loadBundle('admin', env());
    const user = await handler(
      {
        argv: ['users', 'create', '--username', 'alice', '--email', 'alice@example.com', '--password-stdin', '--json'],
        stdin: 'correct horse battery staple\n',
        actor: 'arn:aws:iam::123456789012:user/ops',
      },
      { awsRequestId: 'r-1' },
    );
    expect(user).toMatchObject({ exitCode: 0, stderr: '' });
    expect(JSON.parse(user.stdout)).toMatchObject({ username: 'alice', email: 'alice@example.com' });
    const app = await handler({
      argv: [
        'apps',
        'register',
        '--name',
        'ci',
        '--redirect-uri',
        'https://ci.example.com/cb',
        '--scopes',
        'api read_user',
        '--json',
      ],
    });
    expect(app.exitCode).toBe(0);
    const { application_id, secret } = JSON.parse(app.stdout);
    expect(application_id).toMatch(/^[0-9a-f]{64}$/);

    // API function: the password grant through an HTTP API v2 event.
    const api = loadBundle('api', env()).handler;
    const body = new URLSearchParams({
      grant_type: 'password',
      username: 'alice',
      password: 'correct horse battery staple',
      client_id: application_id,
      client_secret: secret,
    }).toString();
    const token = await api(
      httpApiEvent({
        method: 'POST',
        path: '/oauth/token',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body,
      }),
      lambdaContext,
    );
    expect(token.statusCode).toBe(200);
    expect(token.headers['cache-control']).toBe('no-store');
    const json = JSON.parse(token.body);
    expect(json).toMatchObject({ token_type: 'bearer', expires_in: 7200, scope: 'api read_user' });
    expect(json.access_token).toMatch(/^[0-9a-f]{64}$/);
    expect(json.refresh_token).toBeUndefined();
    accessToken = json.access_token;
  });

  it('API function: health, notification settings and unknown routes through HTTP API v2 events', async () => {
    const { handler } = loadBundle('api', env()); // the same module instance (cached), as a warm Lambda
    const health = await handler(httpApiEvent({ method: 'GET', path: '/-/health' }), lambdaContext);
    expect(health).toMatchObject({ statusCode: 200, body: '{"status":"ok"}' });
    expect(health.headers['content-type']).toBe('application/json; charset=utf-8');

    const auth = { authorization: `Bearer ${accessToken}` };
    const get = await handler(
      httpApiEvent({ method: 'GET', path: '/api/v4/notification_settings', headers: auth }),
      lambdaContext,
    );
    expect(get.statusCode).toBe(200);
    expect(JSON.parse(get.body)).toEqual({ level: 'participating', notification_email: 'alice@example.com' });

    const put = await handler(
      // As API Gateway sends it: the raw query string and its decoded, comma-joined parameters.
      {
        ...httpApiEvent({
          method: 'PUT',
          path: '/api/v4/notification_settings',
          query: 'level=watch&notification_email=alice%40example.com',
          headers: auth,
        }),
        queryStringParameters: { level: 'watch', notification_email: 'alice@example.com' },
      },
      lambdaContext,
    );
    expect(put.statusCode).toBe(200);
    expect(JSON.parse(put.body)).toEqual({ level: 'watch', notification_email: 'alice@example.com' });

    // A comma in a query value stays a string (the OAuth `state` is opaque to us).
    const authorize = await handler(
      {
        ...httpApiEvent({
          method: 'GET',
          path: '/oauth/authorize',
          query: 'client_id=unknown&redirect_uri=https%3A%2F%2Fx.example%2Fcb&response_type=code&state=a%2Cb',
        }),
        queryStringParameters: {
          client_id: 'unknown',
          redirect_uri: 'https://x.example/cb',
          response_type: 'code',
          state: 'a,b',
        },
      },
      lambdaContext,
    );
    expect(authorize.statusCode).toBe(400); // the HTML error page for an unknown client, not a 500 on an array

    const missing = await handler(httpApiEvent({ method: 'GET', path: '/api/v4/nope' }), lambdaContext);
    expect(missing).toMatchObject({ statusCode: 404, body: '{"error":"404 Not Found"}' });
  });
});

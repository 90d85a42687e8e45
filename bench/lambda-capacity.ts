// Capacity of one Lambda instance, measured locally on the BUILT api bundle's handler: an
// instance serves one request at a time, so requests/s per instance = 1 / handler time. Invokes
// GET /api/v4/user (PAT) and the password grant back to back against embedded PostgreSQL, then
// multiplies by the stack sizes' reserved concurrency (infra/budget.ts) for the table in docs/benchmarks.md.
// Run: npx tsx bench/lambda-capacity.ts   (BENCH_SECONDS=5)
import { createHash, randomBytes } from 'node:crypto';
import fs from 'node:fs';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { connectionBudget, proxyConnectionBudget } from '../infra/budget';
import { bundleLambdas } from '../infra/build/bundle';
import { createDb } from '../service/db/create-db';
import { migrateToLatest } from '../service/db/migrator';
import { createUser } from '../service/domain/users';
import { httpApiEvent, lambdaContext } from '../test/support/api-gateway';
import { startTestPostgres } from '../test/support/postgres-server';

const SECONDS = Number(process.env.BENCH_SECONDS ?? 5);
const PASSWORD = 'correct horse battery staple';

async function main(): Promise<void> {
  const out = fs.mkdtempSync(path.join(os.tmpdir(), 'lanyard-capacity-'));
  const [api] = await bundleLambdas({ outDir: out, entries: [{ name: 'api', source: 'service/lambda.ts' }] });
  const postgres = await startTestPostgres();
  const admin = new pg.Client({ connectionString: postgres.adminUrl });
  await admin.connect();
  await admin.query('create database lanyard_capacity');
  await admin.end();
  const url = new URL(postgres.adminUrl);
  url.pathname = '/lanyard_capacity';
  const handle = createDb({ connectionString: url.toString(), max: 1 });
  try {
    await migrateToLatest(handle.db);
    const user = await createUser(handle.db, { username: 'cap', email: 'cap@example.com', password: PASSWORD });
    const pat = `glpat-${randomBytes(32).toString('base64url')}`;
    await handle.db
      .insertInto('personal_access_tokens')
      .values({
        user_id: user.id,
        name: 'cap',
        token_digest: createHash('sha256').update(pat).digest('hex'),
        scopes: ['read_user'],
      })
      .execute();
    Object.assign(process.env, { DATABASE_URL: url.toString(), LOG_LEVEL: 'silent' });
    const { handler } = createRequire(__filename)(api.file) as {
      handler: (e: unknown, c: unknown) => Promise<{ statusCode: number }>;
    };
    const events = {
      'GET /api/v4/user (PAT)': () =>
        httpApiEvent({ method: 'GET', path: '/api/v4/user', headers: { 'private-token': pat } }),
      'password grant': () =>
        httpApiEvent({
          method: 'POST',
          path: '/oauth/token',
          headers: { 'content-type': 'application/x-www-form-urlencoded' },
          body: new URLSearchParams({ grant_type: 'password', username: 'cap', password: PASSWORD }).toString(),
        }),
    };
    const perInstance: Record<string, number> = {};
    for (const [name, event] of Object.entries(events)) {
      await handler(event(), lambdaContext); // warm
      let n = 0;
      const started = performance.now();
      while (performance.now() - started < SECONDS * 1000) {
        const res = await handler(event(), lambdaContext);
        if (res.statusCode !== 200) throw new Error(`${name} answered ${res.statusCode}`);
        n++;
      }
      perInstance[name] = n / ((performance.now() - started) / 1000);
    }
    const line = (s: string) => process.stdout.write(`${s}\n`);
    line(`Per instance (one request at a time, ${os.cpus()[0]?.model ?? 'cpu'}, Node ${process.version}):`);
    for (const [name, rps] of Object.entries(perInstance)) line(`  ${name}: ${rps.toFixed(1)} req/s`);
    line('| stack | reserved concurrency | sign-ins/s | API requests/s |');
    line('|---|---|---|---|');
    const sizes: Array<[string, number]> = [
      ['default (db.t4g.micro, 20)', 20],
      ['db.t4g.micro direct, at its budget', connectionBudget('db.t4g.micro')!.forApi],
      ['db.t4g.micro + rdsProxy', proxyConnectionBudget('db.t4g.micro')!.forApi],
      ['db.t4g.large + rdsProxy', proxyConnectionBudget('db.t4g.large')!.forApi],
    ];
    for (const [label, concurrency] of sizes) {
      line(
        `| ${label} | ${concurrency} | ${(concurrency * perInstance['password grant']).toFixed(0)} | ${(concurrency * perInstance['GET /api/v4/user (PAT)']).toFixed(0)} |`,
      );
    }
  } finally {
    await handle.destroy();
    await postgres.stop();
    fs.rmSync(out, { recursive: true, force: true });
  }
}

main().catch((err) => {
  process.stderr.write(`bench/lambda-capacity: ${(err as Error).stack}\n`);
  process.exit(1);
});

// API authentication on the hot path: requests/s of GET /api/v4/user with a personal access token
// (and with an OAuth token) through app.inject, against GET /-/health (one `select 1`) measured in
// the same run as the baseline. Both cost one database round trip, so the ratio shows what token
// parsing, hashing, the joined look-up, scope checks and serialisation add on top.
// Run: npx tsx bench/api-auth.ts   (TEST_DATABASE_URL to use a server; else embedded PostgreSQL)
import pg from 'pg';
import { buildApp } from '../service/app';
import { loadConfig } from '../service/config';
import { createDb } from '../service/db/create-db';
import { migrateToLatest } from '../service/db/migrator';
import { setPasswordParamsForTesting } from '../service/domain/passwords';
import { startTestPostgres } from '../test/support/postgres-server';
import { makeOAuthToken, makePat, makeUser } from '../test/support/api-fixtures';

const DURATION_MS = Number(process.env.BENCH_DURATION_MS ?? 3000);
const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 8);

type Inject = () => Promise<{ statusCode: number }>;

/** Requests/s with CONCURRENCY requests in flight for DURATION_MS. */
async function measure(inject: Inject): Promise<number> {
  let done = 0;
  const deadline = performance.now() + DURATION_MS;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (performance.now() < deadline) {
        const res = await inject();
        if (res.statusCode !== 200) throw new Error(`unexpected status ${res.statusCode}`);
        done++;
      }
    }),
  );
  return done / ((performance.now() - started) / 1000);
}

async function main() {
  setPasswordParamsForTesting({ memoryCost: 64, timeCost: 1, parallelism: 1 }); // users are created, not signed in: hashing is not measured
  const server = await startTestPostgres();
  const name = `lanyard_bench_${process.pid}`;
  const admin = new pg.Client({ connectionString: server.adminUrl });
  await admin.connect();
  await admin.query(`create database ${name}`);
  const url = new URL(server.adminUrl);
  url.pathname = `/${name}`;
  const handle = createDb({ connectionString: url.toString(), max: 10 });
  try {
    await migrateToLatest(handle.db);
    const app = await buildApp({ db: handle.db, config: loadConfig({ LOG_LEVEL: 'silent' }), logger: false });
    await app.ready();
    const user = await makeUser(handle.db, 'bench');
    const pat = await makePat(handle.db, user, ['read_user']);
    const oauth = await makeOAuthToken(handle.db, user, ['read_user']);

    const cases: Record<string, Inject> = {
      'GET /-/health (baseline)': () => app.inject({ url: '/-/health' }),
      'GET /api/v4/user, PAT (PRIVATE-TOKEN)': () =>
        app.inject({ url: '/api/v4/user', headers: { 'private-token': pat } }),
      'GET /api/v4/user, OAuth (Bearer)': () =>
        app.inject({ url: '/api/v4/user', headers: { authorization: `Bearer ${oauth}` } }),
    };
    for (const inject of Object.values(cases)) await measure(inject); // warm-up (JIT, pool)
    // Two interleaved rounds, best of each, so drift on a shared machine hits every case alike.
    const best: Record<string, number> = {};
    for (let round = 0; round < 2; round++) {
      for (const [label, inject] of Object.entries(cases))
        best[label] = Math.max(best[label] ?? 0, await measure(inject));
    }
    console.log(
      `${server.kind} PostgreSQL, ${CONCURRENCY} requests in flight, ${DURATION_MS} ms per measurement, best of 2 rounds (Node ${process.version})`,
    );
    const baseline = best['GET /-/health (baseline)'];
    for (const [label, rps] of Object.entries(best)) {
      console.log(
        `${label.padEnd(42)} ${rps.toFixed(0).padStart(6)} req/s   ratio to baseline ${(rps / baseline).toFixed(2)}`,
      );
    }
    await app.close();
  } finally {
    await handle.destroy();
    await admin.query(`drop database if exists ${name} with (force)`);
    await admin.end();
    await server.stop();
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});

// The retention purge at scale: pruneExpiredData over a tokens table of 120,000 rows, 100,000 of
// them to delete (rotated tokens inside live refresh chains, and whole dead chains), against a
// baseline measured in the same run: deleting the same rows by id, in the same batches, from a copy
// of the table with the same indexes and no foreign keys, i.e. what removing those rows costs at
// the least. The purge also finds the rows (locking each, FOR UPDATE SKIP LOCKED) and runs its
// foreign key's action once per deleted row (family_id's ON DELETE CASCADE, a query PostgreSQL
// runs for each row: about half the purge's time), about x7 of the baseline together. An action
// without an index scans the table once per deleted row, which made the purge quadratic (before
// migration 0035: 72,000 rows of 80,000 took 452 s, some x2,500); the goal tells the two apart.
// Rounds alternate (re-seeded, untimed); the target is the median of the rounds' ratios.
// Run: npx tsx bench/retention.ts   (TEST_DATABASE_URL to use a server; else embedded PostgreSQL)
import { sql } from 'kysely';
import { migrateToLatest } from '../service/db/migrator';
import type { Db } from '../service/db/schema';
import { registerApplication } from '../service/domain/applications';
import { pruneExpiredData } from '../service/domain/retention';
import { startScratchDatabase } from './support/scratch-database';

const CHAINS = Number(process.env.BENCH_CHAINS ?? 10_000); // live refresh chains of LENGTH tokens
const LENGTH = 10;
const DEAD_CHAINS = Number(process.env.BENCH_DEAD_CHAINS ?? 4_000); // whole chains past the grace, 5 tokens each
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const BATCH = 1000;
const GOAL_BASELINE_RATIO = 10;

/**
 * The tokens: in each live chain the first token (kept with its chain), eight rotated tokens past
 * the grace (deleted) and the live last one; each dead chain (revoked past the grace) goes whole.
 */
async function seed(db: Db, applicationId: number, userId: number): Promise<void> {
  await sql`truncate oauth_access_tokens`.execute(db);
  await sql`
    insert into oauth_access_tokens (id, application_id, user_id, token_digest, refresh_token_digest, scopes,
      expires_at, refreshed_at, parent_id, family_id, created_at) overriding system value
    select c * ${LENGTH} + k + 1, ${applicationId}, ${userId}, md5('a' || c || '.' || k), md5('r' || c || '.' || k),
      array['api'], now() - make_interval(days => 40 - k), case when k < ${LENGTH} - 1 then now() - make_interval(days => 39 - k) end,
      case when k > 0 then c * ${LENGTH} + k end, case when k > 0 then c * ${LENGTH} + 1 end, now() - make_interval(days => 40 - k)
    from generate_series(0, ${CHAINS} - 1) c, generate_series(0, ${LENGTH} - 1) k`.execute(db);
  await sql`
    insert into oauth_access_tokens (id, application_id, user_id, token_digest, refresh_token_digest, scopes,
      expires_at, refreshed_at, revoked_at, parent_id, family_id, created_at) overriding system value
    select 10000000 + c * 5 + k + 1, ${applicationId}, ${userId}, md5('da' || c || '.' || k), md5('dr' || c || '.' || k),
      array['api'], now() - interval '30 days', now() - interval '29 days', now() - interval '20 days',
      case when k > 0 then 10000000 + c * 5 + k end, case when k > 0 then 10000000 + c * 5 + 1 end, now() - interval '30 days'
    from generate_series(0, ${DEAD_CHAINS} - 1) c, generate_series(0, 4) k`.execute(db);
  await sql`vacuum analyze oauth_access_tokens`.execute(db);
}

/** Wall-clock ms of one run. */
async function time(run: () => Promise<void>): Promise<number> {
  const started = performance.now();
  await run();
  return performance.now() - started;
}

async function main() {
  const handle = await startScratchDatabase('retention', 2);
  try {
    const db = handle.db;
    await migrateToLatest(db);
    const user = await db
      .insertInto('users')
      .values({ username: 'bench', email: 'bench@example.com', name: 'Bench' })
      .returning('id')
      .executeTakeFirstOrThrow();
    const { application: app } = await registerApplication(db, {
      name: 'Bench',
      redirectUris: ['https://app.example/cb'],
      scopes: 'api',
    });
    const rounds: { purge: number; base: number; rows: number; total: number }[] = [];
    for (let round = 0; round < ROUNDS; round++) {
      await seed(db, app.id, user.id);
      const total = Number(
        (await sql<{ n: string }>`select count(*) as n from oauth_access_tokens`.execute(db)).rows[0].n,
      );
      // The baseline's table: the same rows and indexes, no foreign keys; the rows the purge will take.
      await sql`drop table if exists tokens_copy`.execute(db);
      await sql`create table tokens_copy (like oauth_access_tokens including all)`.execute(db);
      await sql`insert into tokens_copy overriding system value select * from oauth_access_tokens`.execute(db);
      await sql`vacuum analyze tokens_copy`.execute(db);
      const counted = await pruneExpiredData(db, { dryRun: true });
      await sql`checkpoint`.execute(db);

      // The rows the purge deletes (as seeded): the rotated middles of the live chains, and the dead
      // chains whole. Both sides are checked below to have deleted exactly these.
      const ids = (
        await sql<{ id: string }>`
          select id from tokens_copy where id > 10000000 or (id - 1) % ${LENGTH} between 1 and ${LENGTH - 2}
          order by id`.execute(db)
      ).rows.map((r) => r.id);
      let rows = 0;
      const purgeRun = async () => {
        rows = (await pruneExpiredData(db, { batchSize: BATCH })).deleted.oauth_access_tokens;
      };
      const baselineRun = async () => {
        for (let i = 0; i < ids.length; i += BATCH) {
          await sql`delete from tokens_copy where id = any(${ids.slice(i, i + BATCH)}::bigint[])`.execute(db);
        }
      };
      // Alternate which side runs first, so a drift of the machine falls on both alike.
      let purge = 0;
      let base = 0;
      if (round % 2) {
        base = await time(baselineRun);
        purge = await time(purgeRun);
      } else {
        purge = await time(purgeRun);
        base = await time(baselineRun);
      }
      if (rows !== counted.deleted.oauth_access_tokens || rows !== ids.length)
        throw new Error(
          `the purge deleted ${rows} token rows, its dry run counted ${counted.deleted.oauth_access_tokens}, the baseline ${ids.length}`,
        );
      // And the same rows: what each side kept is the same set of ids.
      const { rows: differ } = await sql<{ n: string }>`
        select count(*) as n from oauth_access_tokens t full join tokens_copy c on c.id = t.id
        where t.id is null or c.id is null`.execute(db);
      if (Number(differ[0].n) !== 0) throw new Error(`the purge and the baseline kept ${differ[0].n} different rows`);
      rounds.push({ purge, base, rows, total });
      console.log(
        `  round ${round + 1}/${ROUNDS}  purge ${purge.toFixed(0)} ms, baseline ${base.toFixed(0)} ms (${rows} of ${total} rows)`,
      );
    }
    const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
    const ratio = median(rounds.map((r) => r.purge / r.base));
    const purge = median(rounds.map((r) => r.purge));
    const base = median(rounds.map((r) => r.base));
    const { rows, total } = rounds[0];
    console.log(
      `${handle.kind} PostgreSQL, ${total} token rows, ${rows} to purge in batches of ${BATCH}, ${ROUNDS} rounds (Node ${process.version})`,
    );
    console.log(
      `target: purge x${ratio.toFixed(2)} of deleting the same rows by id without foreign keys (${((rows / purge) * 1000).toFixed(0)} vs ${((rows / base) * 1000).toFixed(0)} rows/s; goal ≤ x${GOAL_BASELINE_RATIO}) ${ratio <= GOAL_BASELINE_RATIO ? 'met' : 'missed'}`,
    );
  } finally {
    await handle.close();
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});

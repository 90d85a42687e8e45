// A fresh, migrated database per test file (cloned from the run's template: ~50 ms), plus
// resetDatabase() for clean state between tests in one file.
import { sql } from 'kysely';
import pg from 'pg';
import { afterAll, inject } from 'vitest';
import { createDb, type DbHandle } from '../../service/db/create-db';
import { createMigrator } from '../../service/db/migrator';
import type { Db } from '../../service/db/schema';

let counter = 0;

export interface TestDatabase extends DbHandle {
  url: string;
  name: string;
}

async function adminQuery(text: string): Promise<void> {
  const admin = new pg.Client({ connectionString: inject('pgAdminUrl') });
  await admin.connect();
  try {
    await admin.query(text);
  } finally {
    await admin.end();
  }
}

/** Create a database for this test file; dropped automatically after the file. */
export async function createTestDatabase(options: { max?: number } = {}): Promise<TestDatabase> {
  const template = inject('pgTemplate');
  const name = `lanyard_t${process.env.VITEST_POOL_ID ?? '0'}_${process.pid}_${Date.now()}_${counter++}`;
  // CREATE DATABASE … TEMPLATE fails if another session is connected to the template at that
  // instant (parallel workers cloning at once): retry briefly.
  for (let attempt = 0; ; attempt++) {
    try {
      await adminQuery(`create database ${name} template ${template}`);
      break;
    } catch (err) {
      if (attempt > 20 || !/being accessed by other users/.test((err as Error).message)) throw err;
      await new Promise((r) => setTimeout(r, 50 + Math.random() * 100));
    }
  }
  const url = new URL(inject('pgAdminUrl'));
  url.pathname = `/${name}`;
  const handle = createDb({ connectionString: url.toString(), max: options.max ?? 10 });
  const testDb: TestDatabase = {
    ...handle,
    url: url.toString(),
    name,
    async destroy() {
      await handle.destroy();
      await adminQuery(`drop database if exists ${name} with (force)`).catch(() => undefined);
    },
  };
  afterAll(() => testDb.destroy());
  return testDb;
}

/**
 * Empty every table (keeping the migration bookkeeping) and restart identities. `keep` names
 * tables to leave alone: web tests keep `service_keys`, because the app under test caches the
 * session key ring, and a ring replaced under it signs cookies with a key the table no longer has
 * (the session then vanishes at the next cache refresh, e.g. after a forged CSRF token).
 */
export async function resetDatabase(db: Db, keep: readonly string[] = []): Promise<void> {
  const { rows } = await sql<{ tablename: string }>`
    select tablename from pg_tables where schemaname = 'public' and tablename not like 'kysely_%'
  `.execute(db);
  const tables = rows.filter((r) => !keep.includes(r.tablename));
  if (tables.length) {
    await sql.raw(`truncate ${tables.map((r) => `"${r.tablename}"`).join(', ')} restart identity cascade`).execute(db);
  }
}

/** Every migration's down(), newest first, until none is applied (the migrations' own tests). */
export async function migrateDownToEmpty(db: Db): Promise<void> {
  const migrator = createMigrator(db);
  for (;;) {
    const { error, results } = await migrator.migrateDown();
    if (error) throw error;
    if (!results?.length) return;
  }
}

// vitest globalSetup: start PostgreSQL once, build a migrated template database, hand the URLs
// to the test files (each file clones the template into a database of its own).
import pg from 'pg';
import type { TestProject } from 'vitest/node';
import { createDb } from '../../service/db/create-db';
import { migrateToLatest } from '../../service/db/migrator';
import { startTestPostgres, type TestPostgres } from './postgres-server';

declare module 'vitest' {
  export interface ProvidedContext {
    pgAdminUrl: string;
    pgTemplate: string;
  }
}

/** Set up for one vitest project (fast, slow): its own server, torn down by the returned function. */
export default async function setup(project: TestProject) {
  const t0 = Date.now();
  const server: TestPostgres = await startTestPostgres();
  const template = `lanyard_tpl_${process.pid}_${Date.now()}`;
  const admin = new pg.Client({ connectionString: server.adminUrl });
  await admin.connect();
  await admin.query(`create database ${template}`);
  await admin.end();
  const url = new URL(server.adminUrl);
  url.pathname = `/${template}`;
  const handle = createDb({ connectionString: url.toString(), max: 1 });
  await migrateToLatest(handle.db);
  await handle.destroy();
  project.provide('pgAdminUrl', server.adminUrl);
  project.provide('pgTemplate', template);
  console.log(`[test] PostgreSQL (${server.kind}) ready with a migrated template in ${Date.now() - t0} ms`);
  return () => teardown(server, template);
}

async function teardown(server: TestPostgres, template: string) {
  if (server.kind === 'external') {
    const admin = new pg.Client({ connectionString: server.adminUrl });
    await admin.connect();
    const { rows } = await admin.query(`select datname from pg_database where datname like $1`, [
      `lanyard_t%_${process.pid}_%`,
    ]);
    for (const r of rows) await admin.query(`drop database if exists "${r.datname}" with (force)`);
    await admin.query(`drop database if exists "${template}" with (force)`);
    await admin.end();
  }
  await server.stop();
}

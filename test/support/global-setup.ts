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

let server: TestPostgres | undefined;
let template: string | undefined;

export async function setup(project: TestProject) {
  const t0 = Date.now();
  server = await startTestPostgres();
  template = `lanyard_tpl_${process.pid}_${Date.now()}`;
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
}

export async function teardown() {
  if (server && template && server.kind === 'external') {
    const admin = new pg.Client({ connectionString: server.adminUrl });
    await admin.connect();
    const { rows } = await admin.query(`select datname from pg_database where datname like $1`, [
      `lanyard_t%_${process.pid}_%`,
    ]);
    for (const r of rows) await admin.query(`drop database if exists "${r.datname}" with (force)`);
    await admin.query(`drop database if exists "${template}" with (force)`);
    await admin.end();
  }
  await server?.stop();
}

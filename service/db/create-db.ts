// createDb: a Kysely instance over a pg pool. Shared by the server, Lambda, CLI, tests and deploy.
import { Kysely, PostgresDialect, sql } from 'kysely';
import pg from 'pg';
import { runHotStatementsOnPool } from './hot-statements';
import { preparingPool } from './prepared-statements';
import type { Database, Db } from './schema';

// int8 ids and counts: parse to numbers (ids stay far below 2^53).
pg.types.setTypeParser(20, (v) => Number(v));
// `date` columns stay 'YYYY-MM-DD' strings: no time-zone shift.
pg.types.setTypeParser(1082, (v) => v);

export interface CreateDbOptions {
  connectionString: string;
  /** Pool size: 1 on Lambda (one connection per instance), more for a long-running server. */
  max?: number;
  ssl?: pg.PoolConfig['ssl'];
  applicationName?: string;
  /** Resolve the password per new connection (Secrets Manager with re-fetch on rotation). */
  password?: pg.PoolConfig['password'];
  /** Send parameterised queries as named prepared statements (default true; off behind RDS Proxy). */
  preparedStatements?: boolean;
}

export interface DbHandle {
  db: Db;
  pool: pg.Pool;
  destroy(): Promise<void>;
}

export function createDb(options: CreateDbOptions): DbHandle {
  const pool = new pg.Pool({
    connectionString: options.connectionString,
    max: options.max ?? 10,
    ssl: options.ssl,
    password: options.password,
    application_name: options.applicationName ?? 'lanyard',
    connectionTimeoutMillis: 10_000,
    idleTimeoutMillis: 30_000,
  });
  // An idle client's error (server restart) must not crash the process; the pool replaces it.
  pool.on('error', () => undefined);
  // Nor a checked-out client's: pg-pool drops its idle listener on checkout, so a connection killed
  // between two statements of a transaction (PostgreSQL stopped or restarted under load) emitted
  // 'error' with no listener, an uncaught exception that ended `npm start`. The statement in
  // progress or the next one still fails (and the request with it); the pool discards the client.
  pool.on('connect', (client) => client.on('error', () => undefined));
  const prepared = options.preparedStatements !== false;
  const db = new Kysely<Database>({ dialect: new PostgresDialect({ pool: prepared ? preparingPool(pool) : pool }) });
  if (prepared) runHotStatementsOnPool(db, pool);
  let destroyed = false;
  return {
    db,
    pool,
    async destroy() {
      if (destroyed) return;
      destroyed = true;
      await db.destroy();
    },
  };
}

/** One round trip that needs nothing but a connection (`select 1`): health checks and early connects. */
export async function pingDatabase(db: Db): Promise<void> {
  await sql`select 1`.execute(db);
}

/** A one-line, secret-free description of why a database could not be reached. */
export function describeConnectionError(err: unknown, connectionString?: string): string {
  const e = err as { code?: string; message?: string };
  let where = 'the database';
  if (connectionString) {
    try {
      const u = new URL(connectionString);
      where = `${u.hostname}${u.port ? `:${u.port}` : ''}${u.pathname}`;
    } catch {
      return 'DATABASE_URL is not a valid URL (expected postgres://user:password@host:port/database)';
    }
  }
  switch (e?.code) {
    case 'ECONNREFUSED':
      return `cannot connect to ${where}: connection refused (is PostgreSQL running?)`;
    case 'ENOTFOUND':
    case 'EAI_AGAIN':
      return `cannot connect to ${where}: unknown host`;
    case 'ETIMEDOUT':
      return `cannot connect to ${where}: timed out`;
    case '28P01':
    case '28000':
      return `cannot connect to ${where}: authentication failed`;
    case '3D000':
      return `cannot connect to ${where}: database does not exist`;
    default:
      return `cannot connect to ${where}: ${(e?.message ?? String(err)).split('\n')[0]}`;
  }
}

/** Validate a DATABASE_URL before use; returns an error line or undefined. */
export function checkDatabaseUrl(url: string): string | undefined {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    return 'DATABASE_URL is not a valid URL (expected postgres://user:password@host:port/database)';
  }
  if (u.protocol !== 'postgres:' && u.protocol !== 'postgresql:') {
    return `DATABASE_URL must start with postgres:// or postgresql:// (got ${u.protocol}//)`;
  }
  return undefined;
}

// The Lambda functions' database: one connection per instance (pool max 1), credentials from
// Secrets Manager (fetched at init, cached, re-fetched once when PostgreSQL rejects them, so RDS's
// scheduled rotation causes no outage), TLS verified against the RDS CAs. Without AWS settings
// (local runs and tests of the built bundle) it falls back to DATABASE_URL.
import { Kysely, PostgresDialect, type PostgresPool } from 'kysely';
import pg from 'pg';
import { ConfigError, type Config } from '../config';
import { createDb, pingDatabase } from '../db/create-db'; // also installs the shared int8/date parsers
import { preparingPool } from '../db/prepared-statements';
import type { Database, Db } from '../db/schema';
import { rdsCaBundle } from './rds-ca';
import { CachedSecret, secretsManagerOptions, secretsManagerStore, type SecretStore } from './secret-store';

export interface DatabaseCredentials {
  username: string;
  password: string;
}

/** RDS-managed master secrets (and our own) hold {"username": …, "password": …}. */
export function parseDatabaseCredentials(text: string, arn: string): DatabaseCredentials {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw new Error(`secret ${arn} is not JSON`);
  }
  const { username, password } = (value ?? {}) as Record<string, unknown>;
  if (typeof username !== 'string' || !username || typeof password !== 'string' || !password) {
    throw new Error(`secret ${arn} lacks a username or password`);
  }
  return { username, password };
}

/** PostgreSQL's invalid_password (28P01): the cached password is stale (rotated). */
export const isAuthenticationFailure = (err: unknown): boolean => (err as { code?: string })?.code === '28P01';

export interface LambdaDatabaseOptions {
  applicationName: string;
  /** Secrets Manager by default; tests pass an in-memory store. */
  store?: SecretStore;
  /** TLS options; default: verify against the RDS CAs (or DB_CA_FILE). Tests pass false. */
  ssl?: pg.PoolConfig['ssl'];
}

export interface LambdaDatabase {
  db: Db;
  destroy(): Promise<void>;
  /** Resolves once the credentials are cached (started at init; rejects if the fetch failed). */
  credentialsReady: Promise<void>;
  /**
   * Open the instance's connection now, during init: its round trips (TCP, TLS, SCRAM) then overlap
   * with Fastify's boot instead of delaying the first request. A failure is not reported here: the
   * first request connects again (and answers 503 if it still cannot).
   */
  connectEarly(): void;
}

const connectEarly = (db: Db) => () => void pingDatabase(db).catch(() => undefined);

export function openLambdaDatabase(config: Config, options: LambdaDatabaseOptions): LambdaDatabase {
  if (config.aws?.dbSecretArn) return openWithSecret(config, config.aws.dbSecretArn, options);
  if (!config.databaseUrl) throw new ConfigError('DB_SECRET_ARN (or DATABASE_URL) is required on Lambda');
  const handle = createDb({
    connectionString: config.databaseUrl,
    max: 1,
    ssl: options.ssl,
    applicationName: options.applicationName,
    preparedStatements: config.dbPreparedStatements,
  });
  return {
    db: handle.db,
    destroy: handle.destroy,
    credentialsReady: Promise.resolve(),
    connectEarly: connectEarly(handle.db),
  };
}

function openWithSecret(config: Config, dbSecretArn: string, options: LambdaDatabaseOptions): LambdaDatabase {
  const aws = config.aws!;
  const secret = new CachedSecret(
    options.store ?? secretsManagerStore(secretsManagerOptions(aws)),
    dbSecretArn,
    parseDatabaseCredentials,
  );
  const ssl = options.ssl ?? { ca: rdsCaBundle(aws.dbCaFile), rejectUnauthorized: true };
  // Fetch during init (free CPU burst, outside the first request); a failure here is retried on use.
  const credentialsReady = secret.get().then(() => undefined);
  credentialsReady.catch(() => undefined);

  let pool: pg.Pool | undefined;
  let poolUser: string | undefined;
  const poolFor = (username: string): pg.Pool => {
    if (pool && poolUser === username) return pool;
    void pool?.end().catch(() => undefined);
    poolUser = username;
    pool = new pg.Pool({
      host: aws.dbHost,
      port: aws.dbPort,
      database: aws.dbName,
      user: username,
      // Asked per new connection, so a refreshed secret applies to the next connect.
      password: async () => (await secret.get()).password,
      ssl,
      max: 1,
      application_name: options.applicationName,
      connectionTimeoutMillis: 10_000,
      // A frozen instance keeps its connection; RDS closes it if the instance is reaped.
      idleTimeoutMillis: 10 * 60_000,
      keepAlive: true,
    });
    pool.on('error', () => undefined);
    return pool;
  };

  const rotatingPool: PostgresPool = {
    async connect() {
      const { username } = await secret.get();
      try {
        return await poolFor(username).connect();
      } catch (err) {
        if (!isAuthenticationFailure(err)) throw err;
        // Once: a rotation happened since we cached the secret. A second failure is real.
        const fresh = await secret.refresh();
        return poolFor(fresh.username).connect();
      }
    },
    async end() {
      await pool?.end();
    },
  };

  const dialectPool = config.dbPreparedStatements ? preparingPool(rotatingPool) : rotatingPool;
  const db = new Kysely<Database>({ dialect: new PostgresDialect({ pool: dialectPool }) });
  let destroyed = false;
  return {
    db,
    credentialsReady,
    connectEarly: connectEarly(db),
    async destroy() {
      if (destroyed) return;
      destroyed = true;
      await db.destroy();
    },
  };
}

// Open the configured database: DATABASE_URL, else the local embedded instance under .lanyard/.
// Every failure becomes one clear line (DatabaseUnavailableError), never a stack trace.
import os from 'node:os';
import { checkDatabaseUrl, createDb, describeConnectionError, type DbHandle, pingDatabase } from './create-db';
import { ensureLocalPostgres, type LocalPostgres } from './local-postgres';

export class DatabaseUnavailableError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'DatabaseUnavailableError';
  }
}

export interface OpenDatabaseOptions {
  databaseUrl?: string;
  home: string;
  /** The pool's size; unset: defaultPoolSize. */
  max?: number;
  applicationName?: string;
  /** Named prepared statements (createDb's option; default true). */
  preparedStatements?: boolean;
  log?: (line: string) => void;
}

export interface OpenDatabase extends DbHandle {
  url: string;
  local?: LocalPostgres;
  /** Close the pool, then stop the local instance if this process started it. */
  close(): Promise<void>;
}

/** A remote database's pool: enough connections in flight to cover the network's round trips. */
const REMOTE_POOL_SIZE = 10;

/**
 * The pool's size when none is configured. A PostgreSQL on this machine (the embedded one, or a
 * URL naming loopback or a Unix socket) runs its backends on the server's own cores, where a round
 * trip costs microseconds: one connection per core (at least 2, so one slow statement never holds
 * every request). More connections than cores only make the backends take turns on them, and each
 * statement then costs PostgreSQL more CPU (docs/benchmarks.md: about a quarter more a refresh and a
 * code exchange with 10 on 2 cores). A remote one gets REMOTE_POOL_SIZE.
 */
export function defaultPoolSize(
  url: string,
  { embedded = false, cores = os.availableParallelism() }: { embedded?: boolean; cores?: number } = {},
): number {
  return embedded || isOnThisMachine(url) ? Math.max(2, Math.min(cores, REMOTE_POOL_SIZE)) : REMOTE_POOL_SIZE;
}

function isOnThisMachine(url: string): boolean {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return false;
  }
  // libpq's `?host=/run/postgresql` (a Unix socket) overrides the URL's host.
  const host = parsed.searchParams.get('host') ?? decodeURIComponent(parsed.hostname);
  return (
    host === '' ||
    host.startsWith('/') ||
    host === 'localhost' ||
    host === '[::1]' ||
    host === '::1' ||
    /^127\.\d+\.\d+\.\d+$/.test(host)
  );
}

export async function openDatabase(options: OpenDatabaseOptions): Promise<OpenDatabase> {
  let url = options.databaseUrl;
  let local: LocalPostgres | undefined;
  if (url) {
    const problem = checkDatabaseUrl(url);
    if (problem) throw new DatabaseUnavailableError(problem);
  } else {
    try {
      local = await ensureLocalPostgres(options.home, options.log);
    } catch (err) {
      throw new DatabaseUnavailableError(
        `cannot start the local PostgreSQL in ${options.home}: ${(err as Error).message.split('\n')[0]}`,
      );
    }
    url = local.url;
  }
  const handle = createDb({
    connectionString: url,
    max: options.max ?? defaultPoolSize(url, { embedded: local !== undefined }),
    applicationName: options.applicationName,
    preparedStatements: options.preparedStatements,
  });
  try {
    await pingDatabase(handle.db);
  } catch (err) {
    await handle.destroy();
    await local?.stop();
    throw new DatabaseUnavailableError(describeConnectionError(err, url));
  }
  return {
    ...handle,
    url,
    local,
    async close() {
      await handle.destroy();
      await local?.stop();
    },
  };
}

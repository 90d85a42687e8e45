// Open the configured database: DATABASE_URL, else the local embedded instance under .lanyard/.
// Every failure becomes one clear line (DatabaseUnavailableError), never a stack trace.
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
    max: options.max,
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

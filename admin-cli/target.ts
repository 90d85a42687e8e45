// Where commands run locally: DATABASE_URL, else the embedded PostgreSQL under .lanyard/ that
// `npm start` shares (started on demand, attached to if the server already runs it). Opened on
// first use (the embedded one also migrated); progress goes to stderr so --json output stays one
// document.
import { loadConfig } from '../service/config';
import { openDatabase, type OpenDatabase } from '../service/db/open';
import type { Db } from '../service/db/schema';
import { migrateLocalDatabase } from '../service/local/service-key-file';
import type { Target } from './command';

export function localTarget(env: NodeJS.ProcessEnv, log: (line: string) => void): Target {
  let opening: Promise<OpenDatabase> | undefined;
  return {
    db() {
      opening ??= (async () => {
        const config = loadConfig(env);
        const database = await openDatabase({
          databaseUrl: config.databaseUrl,
          home: config.home,
          max: 2,
          applicationName: 'lanyard-admin',
          log,
        });
        // The embedded database is Lanyard's own: bring its schema up to date as `npm start` would,
        // so a fresh checkout works without a separate `db migrate`. A DATABASE_URL server is the
        // operator's: there, pending migrations stay an explicit step (the command refuses).
        if (database.local) {
          try {
            const { newlyApplied } = await migrateLocalDatabase(database.db, config.home, log);
            if (newlyApplied.length) log(`Applied migrations to the local database: ${newlyApplied.join(', ')}`);
          } catch (err) {
            await database.close();
            throw err;
          }
        }
        return database;
      })();
      return opening.then((d) => d.db);
    },
    async close() {
      const d = await opening?.catch(() => undefined);
      await d?.close();
    },
  };
}

/** A database someone else owns (tests, the admin Lambda): never closed here. */
export const databaseTarget = (db: Db | (() => Promise<Db>)): Target => ({
  db: async () => (typeof db === 'function' ? db() : db),
  close: async () => undefined,
});

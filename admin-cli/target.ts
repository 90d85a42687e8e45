// Where commands run locally: DATABASE_URL, else the embedded PostgreSQL under .lanyard/ that
// `npm start` shares (started on demand, attached to if the server already runs it). Opened on
// first use; progress goes to stderr so --json output stays one document.
import { loadConfig } from '../service/config';
import { openDatabase, type OpenDatabase } from '../service/db/open';
import type { Db } from '../service/db/schema';
import type { Target } from './command';

export function localTarget(env: NodeJS.ProcessEnv, log: (line: string) => void): Target {
  let opening: Promise<OpenDatabase> | undefined;
  return {
    db() {
      opening ??= (async () => {
        const config = loadConfig(env);
        return openDatabase({ databaseUrl: config.databaseUrl, home: config.home, max: 2, applicationName: 'lanyard-admin', log });
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

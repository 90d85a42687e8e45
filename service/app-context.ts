// AppContext: what buildApp hands every route plugin (the database and the parsed config). Its own
// module so route plugins depend on it, not on app.ts (which imports them).
import type { Config } from './config';
import type { Db } from './db/schema';

export interface AppContext {
  db: Db;
  config: Config;
}

// withTransaction: run `fn` atomically — in the caller's transaction when there is one (the CLI runs
// each command in one), else in a new one. Domain functions that change rows and record an audit
// event use it, so a failure can never leave the change without its audit event, or half of it.
import type { Transaction } from 'kysely';
import type { Database, DbOrTrx } from './schema';

export function withTransaction<T>(db: DbOrTrx, fn: (trx: Transaction<Database>) => Promise<T>): Promise<T> {
  return db.isTransaction ? fn(db as Transaction<Database>) : db.transaction().execute(fn);
}

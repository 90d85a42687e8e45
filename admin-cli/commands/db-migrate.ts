// `db migrate`: apply every pending migration (the same migrator as `npm start` and the deploy).
import type { Db } from '../../service/db/schema';
import { recordAudit } from '../../service/domain/audit';
import { defineCommand } from '../command';

export default defineCommand({
  path: ['db', 'migrate'],
  describe: 'Apply pending database migrations',
  examples: [['db migrate', 'bring the database schema up to date']],
  // The migrator takes its own lock and transaction; it must see the database as it is.
  transaction: false,
  needsSchema: false,
  async run(_args, { db, actor, services }) {
    // Locally the service keys first move out of the database into LANYARD_HOME (migration 0012).
    const { applied, pending, newlyApplied } = await services.migrate(db as Db);
    // After the migration: the audit table may only exist from now on.
    if (newlyApplied.length)
      await recordAudit(db, { actor, action: 'database.migrate', details: { migrations: newlyApplied } });
    const text = newlyApplied.length
      ? `Applied ${newlyApplied.length} migration(s):\n${newlyApplied.map((m) => `  ${m}`).join('\n')}`
      : `The database is up to date (${applied.length} migration(s) applied).`;
    return { json: { applied, pending }, text };
  },
});

// `db status`: applied and pending migrations, changing nothing.
import { migrationStatus } from '../../service/db/migrator';
import { defineCommand } from '../command';
import { table } from '../output';

export default defineCommand({
  path: ['db', 'status'],
  describe: 'Show applied and pending database migrations',
  examples: [['db status --json', 'list migrations as JSON: {"applied": [...], "pending": [...]}']],
  transaction: false,
  needsSchema: false,
  async run(_args, { db }) {
    const { applied, pending } = await migrationStatus(db);
    const rows = [
      ...applied.map((name) => ({ name, state: 'applied' })),
      ...pending.map((name) => ({ name, state: 'pending' })),
    ];
    const text =
      table(rows, [
        { header: 'MIGRATION', value: (r) => r.name },
        { header: 'STATE', value: (r) => r.state },
      ]) +
      `\n\n${applied.length} applied, ${pending.length} pending${pending.length ? ': run `lanyard-admin db migrate`' : ''}`;
    return { json: { applied, pending }, text };
  },
});

// `db prune [--dry-run]`: delete expired sessions, codes, tokens and rate-limit counters now (the
// same purge `npm start` runs hourly and the deployed stack on a schedule), one line per batch on
// stderr. Each batch commits on its own, so an interrupted prune keeps what it did; audited.
import { DEFAULT_BATCH_SIZE, pruneExpiredData } from '../../service/domain/retention';
import { defineCommand } from '../command';
import { UserError } from '../errors';
import { table } from '../output';

interface PruneArgs {
  dryRun?: boolean;
  auditRetentionDays?: string;
  mailRetentionDays?: string;
  batchSize?: string;
}

/** A positive integer option, given as a string (yargs would turn "abc" into NaN and "1e3" into 1000). */
function positive(name: string, value: string | undefined, max: number): number | undefined {
  if (value === undefined) return undefined;
  const text = String(value);
  if (!/^[1-9]\d*$/.test(text) || Number(text) > max)
    throw new UserError(`--${name} must be a whole number from 1 to ${max} (got "${text}")`);
  return Number(text);
}

export default defineCommand<PruneArgs>({
  path: ['db', 'prune'],
  describe: 'Delete expired sessions, authorization codes, tokens and rate-limit counters now',
  examples: [
    ['db prune --dry-run', 'count what would be deleted, delete nothing'],
    ['db prune --json', 'prune; {"dry_run": false, "deleted": {"web_sessions": 12, ...}, "total": 12}'],
    ['db prune --audit-retention-days 365', 'also delete audit events older than a year'],
  ],
  options: (y) =>
    y
      .option('dry-run', { type: 'boolean', describe: 'Count what would be deleted; delete nothing' })
      .option('audit-retention-days', {
        type: 'string',
        describe: 'Also delete audit events older than this many days (default: keep them)',
      })
      .option('mail-retention-days', {
        type: 'string',
        describe: 'Delete sent and failed mail settled more than this many days ago (default: MAIL_RETENTION_DAYS, 30)',
      })
      .option('batch-size', { type: 'string', describe: `Rows per DELETE statement (default ${DEFAULT_BATCH_SIZE})` }),
  // Batches commit one by one: a long prune never holds one big transaction.
  transaction: false,
  async run(args, { db, actor, progress, services }) {
    const auditRetentionDays = positive('audit-retention-days', args.auditRetentionDays, 36500);
    const mailRetentionDays =
      positive('mail-retention-days', args.mailRetentionDays, 3650) ?? services.mail().config.retentionDays;
    const batchSize = positive('batch-size', args.batchSize, 100_000);
    const dryRun = Boolean(args.dryRun);
    const report = await pruneExpiredData(db, {
      dryRun,
      auditRetentionDays,
      mailRetentionDays,
      batchSize,
      actor,
      onBatch: (p) =>
        progress(
          dryRun
            ? `${p.table}: ${p.rows} to delete (${p.rule})`
            : `${p.table}: batch ${p.batch}, ${p.rows} deleted (${p.rule}), ${p.tableTotal} so far`,
        ),
    });
    const rows = Object.entries(report.deleted).map(([name, n]) => ({ name, n }));
    const text =
      table(rows, [
        { header: 'TABLE', value: (r) => r.name },
        { header: dryRun ? 'TO DELETE' : 'DELETED', value: (r) => r.n },
      ]) +
      `\n\n${dryRun ? `${report.total} rows would be deleted (dry run: nothing changed)` : `${report.total} rows deleted`}` +
      (auditRetentionDays === undefined ? '; audit events kept' : '');
    return { json: { dry_run: report.dryRun, deleted: report.deleted, total: report.total }, text };
  },
});

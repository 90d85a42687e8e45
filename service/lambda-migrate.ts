// The maintenance bundle, two handlers. `handler`, the migration function: invoked by `pulumi up`
// (aws.lambda.Invocation) before the API function changes, and by hand when needed; runs the
// shared migrator, then seeds the session key ring if the deploy just created its secret. Throwing
// fails the invocation, and with it the deploy. `prune`, the retention function (its own function
// and role, handler index.prune, on an EventBridge schedule): purges expired rows, nothing else.
import { loadConfig } from './config';
import { openLambdaDatabase } from './aws/database';
import { secretsManagerOptions, secretsManagerStore } from './aws/secret-store';
import { ensureKeyRingSecret } from './aws/session-key-ring';
import { migrateToLatest, migrationStatus } from './db/migrator';
import { type PruneReport, pruneExpiredData } from './domain/retention';

const config = loadConfig(process.env, { trustProxy: true });
const database = openLambdaDatabase(config, { applicationName: 'lanyard-migrate' });

export interface MigrateEvent {
  /** "status" reports without applying; default "migrate". */
  action?: 'migrate' | 'status';
}

export interface MigrateResult {
  applied: string[];
  pending: string[];
  /** Applied by this invocation. */
  newlyApplied: string[];
  /** The session key ring secret: created now or already present (absent when not configured). */
  sessionKeyRing?: 'created' | 'present';
}

export const handler = async (event: MigrateEvent | null | undefined): Promise<MigrateResult> => {
  if (event?.action === 'status') return { ...(await migrationStatus(database.db)), newlyApplied: [] };
  const { applied, pending, newlyApplied } = await migrateToLatest(database.db);
  const result: MigrateResult = { applied, pending, newlyApplied };
  const aws = config.aws;
  if (aws?.sessionKeysSecretArn) {
    result.sessionKeyRing = await ensureKeyRingSecret(
      secretsManagerStore(secretsManagerOptions(aws)),
      aws.sessionKeysSecretArn,
    );
  }
  return result;
};

/**
 * The scheduled purge. Whatever the event holds, it only prunes: the schedule's target cannot be
 * turned into a migration. Counts go to the log (CloudWatch) and the audit trail.
 */
export const prune = async (): Promise<PruneReport> => {
  const started = Date.now();
  const report = await pruneExpiredData(database.db, {
    auditRetentionDays: config.auditRetentionDays,
    actor: 'system:retention-schedule',
  });
  if (config.logLevel !== 'silent') {
    console.log(JSON.stringify({ level: 'info', msg: 'retention: pruned', ...report, ms: Date.now() - started }));
  }
  return report;
};

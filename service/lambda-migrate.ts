// The maintenance bundle, two handlers. `handler`, the migration function: invoked by `pulumi up`
// (aws.lambda.Invocation) before the API function changes, and by hand when needed. The only
// function holding the master user's credentials: it migrates, keeps the app role (lanyard_app)
// and its secret current, and seeds the session key ring and the first OpenID Connect signing key
// (aws/migrate-handler.ts). Throwing fails the invocation, and with it the deploy. `prune`, the
// retention function (its own function and role, handler index.prune, on an EventBridge schedule,
// connected as the app role): purges expired rows, nothing else.
import { openLambdaDatabase } from './aws/database';
import { createMigrateHandler } from './aws/migrate-handler';
import { secretsManagerOptions, secretsManagerStore } from './aws/secret-store';
import { loadConfig, signingKeyPolicy } from './config';
import { type PruneReport, pruneExpiredData } from './domain/retention';

export type { MigrateEvent, MigrateResult } from './aws/migrate-handler';

const config = loadConfig(process.env);
const database = openLambdaDatabase(config, { applicationName: 'lanyard-migrate' });
const aws = config.aws;

export const handler = createMigrateHandler({
  db: database.db,
  store: aws ? secretsManagerStore(secretsManagerOptions(aws)) : undefined,
  appDbSecretArn: aws?.appDbSecretArn,
  sessionKeysSecretArn: aws?.sessionKeysSecretArn,
  signingKeysSecretArn: aws?.signingKeysSecretArn,
  signingKeyPolicy: signingKeyPolicy(config),
});

/**
 * The scheduled purge. Whatever the event holds, it only prunes: the schedule's target cannot be
 * turned into a migration. Counts go to the log (CloudWatch) and the audit trail.
 */
export const prune = async (): Promise<PruneReport> => {
  const started = Date.now();
  const report = await pruneExpiredData(database.db, {
    auditRetentionDays: config.auditRetentionDays,
    mailRetentionDays: config.mail.retentionDays,
    actor: 'system:retention-schedule',
  });
  if (config.logLevel !== 'silent') {
    console.log(JSON.stringify({ level: 'info', msg: 'retention: pruned', ...report, ms: Date.now() - started }));
  }
  return report;
};

// The maintenance bundle. `handler`, the migration function: invoked by `pulumi up`
// (aws.lambda.Invocation) before the API function changes, and by hand when needed. The only
// function holding the master user's credentials: it migrates, keeps the app role (lanyard_app)
// and its secret current, and seeds the session key ring and the first OpenID Connect signing key
// (aws/migrate-handler.ts). Throwing fails the invocation, and with it the deploy. `prune`, the
// retention function (its own function and role, handler index.prune, on an EventBridge schedule,
// connected as the app role): purges expired rows, nothing else. `relayMail` and
// `recordMailEvents` (SES bounces and complaints from SNS) are the mail functions in the VPC.
import { openLambdaDatabase } from './aws/database';
import { createMailEventsHandler } from './aws/mail-events-handler';
import { createMigrateHandler } from './aws/migrate-handler';
import { secretsManagerOptions, secretsManagerStore } from './aws/secret-store';
import { secretSigningKeySource } from './aws/signing-key-secret';
import { loadConfig, signingKeyPolicy } from './config';
import { type PruneReport, pruneExpiredData } from './domain/retention';
import { drainLogoutsOnce } from './mail/backchannel-sender';
import { drainOnce, type RoundReport } from './mail/sender';
import { sqsLogoutHandOff } from './mail/sqs-handoff-transport';
import { createMailTransport } from './mail/transports';

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

/**
 * The mail relay (its own function, handler index.relayMail, every minute): drains the outbox onto
 * the SES hand-off queue (MAIL_HANDOFF_QUEUE_URL) until it is empty or the time budget is spent.
 */
export const relayMail = async (_event?: unknown, context?: { getRemainingTimeInMillis?(): number }) => {
  const transport = createMailTransport(config.mail, {
    aws: aws && { region: aws.region, credentials: aws.credentials },
  });
  const total: RoundReport = { claimed: 0, sent: 0, retried: 0, failed: 0 };
  const options = {
    db: database.db,
    transport,
    from: config.mail.from,
    maxAttempts: config.mail.maxAttempts,
    concurrency: config.mail.concurrency,
    leaseSeconds: config.mail.leaseSeconds,
  };
  // Stop with 10 s to spare: a claim cut short by the timeout would wait out its lease.
  const timeLeft = () => context?.getRemainingTimeInMillis?.() ?? Number.POSITIVE_INFINITY;
  for (;;) {
    const round = await drainOnce(options);
    for (const k of Object.keys(total) as (keyof RoundReport)[]) total[k] += round[k];
    if (round.claimed === 0 || timeLeft() < 10_000) break;
  }
  await transport.close();
  if (config.logLevel !== 'silent' && total.claimed) {
    console.log(JSON.stringify({ level: 'info', msg: 'mail: relayed', ...total }));
  }
  await relayLogouts(timeLeft);
  return total;
};

/**
 * Back-channel logout tokens, by the same relay: signed here (the signing key secret) and handed to
 * the same queue, whose sender function POSTs them from outside the VPC (docs/logout.md).
 */
async function relayLogouts(timeLeft: () => number): Promise<void> {
  const t = config.mail.transport;
  if (!aws?.signingKeysSecretArn || t.kind !== 'ses' || !t.handOffQueueUrl) return;
  const options = {
    db: database.db,
    signingKeys: secretSigningKeySource(
      secretsManagerStore(secretsManagerOptions(aws)),
      aws.signingKeysSecretArn,
      signingKeyPolicy(config),
    ),
    issuer: config.publicUrl,
    maxAttempts: config.mail.maxAttempts,
    concurrency: config.mail.concurrency,
    leaseSeconds: config.mail.leaseSeconds,
    post: sqsLogoutHandOff({ queueUrl: t.handOffQueueUrl, region: aws.region, credentials: aws.credentials }),
  };
  for (;;) {
    const round = await drainLogoutsOnce(options);
    if (config.logLevel !== 'silent' && round.claimed) {
      console.log(JSON.stringify({ level: 'info', msg: 'back-channel logout: relayed', ...round }));
    }
    if (round.claimed === 0 || timeLeft() < 10_000) break;
  }
}

/**
 * The mail events function (its own function and role, handler index.recordMailEvents, invoked by
 * the SES events topic): hard bounces and complaints suppress their addresses
 * (aws/mail-events-handler.ts).
 */
export const recordMailEvents = createMailEventsHandler({
  db: database.db,
  log: (level, entry) => {
    if (config.logLevel !== 'silent') console.log(JSON.stringify({ level, ...entry }));
  },
});

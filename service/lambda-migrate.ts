// The migration function: invoked by `pulumi up` (aws.lambda.Invocation) before the API function
// changes, and by hand when needed. Runs the shared migrator, then seeds the session key ring if
// the deploy just created its secret, and writes the first OpenID Connect signing key likewise.
// Throwing fails the invocation, and with it the deploy.
import { loadConfig, signingKeyPolicy } from './config';
import { openLambdaDatabase } from './aws/database';
import { secretsManagerOptions, secretsManagerStore } from './aws/secret-store';
import { ensureKeyRingSecret, secretKeyRingSource } from './aws/session-key-ring';
import { ensureSigningKeySecret } from './aws/signing-key-secret';
import { resealTotpSecrets } from './domain/totp-secrets';
import { migrateToLatest, migrationStatus } from './db/migrator';

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
  /** The OpenID Connect signing key secret: its first key written now, or already present. */
  signingKeys?: 'created' | 'present';
}

export const handler = async (event: MigrateEvent | null | undefined): Promise<MigrateResult> => {
  if (event?.action === 'status') return { ...(await migrationStatus(database.db)), newlyApplied: [] };
  const { applied, pending, newlyApplied } = await migrateToLatest(database.db);
  const result: MigrateResult = { applied, pending, newlyApplied };
  const aws = config.aws;
  if (aws?.sessionKeysSecretArn) {
    const store = secretsManagerStore(secretsManagerOptions(aws));
    result.sessionKeyRing = await ensureKeyRingSecret(store, aws.sessionKeysSecretArn);
    // The deployed key ring is in Secrets Manager, out of a frozen migration's reach: the deploy's
    // data pass seals TOTP secrets still in clear (and any under a retired key) with it.
    await resealTotpSecrets(database.db, await secretKeyRingSource(store, aws.sessionKeysSecretArn).load());
  }
  if (aws?.signingKeysSecretArn) {
    result.signingKeys = await ensureSigningKeySecret(
      secretsManagerStore(secretsManagerOptions(aws)),
      aws.signingKeysSecretArn,
      signingKeyPolicy(config),
    );
  }
  return result;
};

// The admin function's entry (bundled by infra/build/bundle.ts as the `admin` Lambda): the CLI's
// `--function`/`--stack` invokes it with {argv, stdin?, actor?} and prints the {exitCode, stdout,
// stderr} it returns. IAM-only: no API Gateway route reaches it. Its database comes the same way
// as the API function's (aws/database.ts: Secrets Manager credentials, TLS to RDS, one connection).
import { openLambdaDatabase } from '../../service/aws/database';
import { secretsManagerOptions, secretsManagerStore } from '../../service/aws/secret-store';
import { loadConfig, signingKeyPolicy } from '../../service/config';
import { migrateToLatest } from '../../service/db/migrator';
import { createAdminHandler } from './admin-handler';
import { secretKeyRingSource } from '../../service/aws/session-key-ring';
import { secretSessionKeyService } from './session-keys';
import { secretSigningKeyService } from './signing-keys';

const config = loadConfig(process.env, { trustProxy: false });
const database = openLambdaDatabase(config, { applicationName: 'lanyard-admin' });
const aws = config.aws;

const LEVELS = ['trace', 'debug', 'info', 'warn', 'error', 'fatal'];
const logs = (level: string) =>
  config.logLevel !== 'silent' && LEVELS.indexOf(level) >= LEVELS.indexOf(config.logLevel);

export const handler = createAdminHandler({
  db: database.db,
  log: (level, entry) => {
    if (logs(level)) console.log(JSON.stringify({ level, ...entry }));
  },
  services: aws && {
    // Deployed, the service keys are in Secrets Manager (the migration function seals TOTP secrets
    // with them): nothing to move out of the database, and no LANYARD_HOME to move them to.
    migrate: (db) => migrateToLatest(db),
    ...(aws.sessionKeysSecretArn && {
      rotateSessionKey: secretSessionKeyService(
        secretsManagerStore(secretsManagerOptions(aws)),
        aws.sessionKeysSecretArn,
      ),
      keyRing: () =>
        secretKeyRingSource(secretsManagerStore(secretsManagerOptions(aws)), aws.sessionKeysSecretArn as string).load(),
    }),
    // Deployed, the signing keys live only in their secret: never the Lambda's read-only file system.
    ...(aws.signingKeysSecretArn && {
      rotateSigningKey: secretSigningKeyService(
        secretsManagerStore(secretsManagerOptions(aws)),
        aws.signingKeysSecretArn,
        signingKeyPolicy(config),
      ),
    }),
  },
});

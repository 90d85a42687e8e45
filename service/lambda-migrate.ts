// The migration function: invoked by `pulumi up` (aws.lambda.Invocation) before the API function
// changes, and by hand when needed. The only function holding the master user's credentials:
// it migrates, keeps the app role (lanyard_app) and its secret current, and seeds the session key
// ring and the first OpenID Connect signing key (aws/migrate-handler.ts). Throwing fails the
// invocation, and with it the deploy.
import { openLambdaDatabase } from './aws/database';
import { createMigrateHandler } from './aws/migrate-handler';
import { secretsManagerOptions, secretsManagerStore } from './aws/secret-store';
import { loadConfig, signingKeyPolicy } from './config';

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

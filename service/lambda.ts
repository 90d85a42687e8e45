// The API function's handler (API Gateway HTTP API, payload v2) over the same Fastify app as
// `npm start`. Everything slow happens during init — the credentials fetch, Fastify's boot — so
// the first request does not pay for it. One connection per instance (see aws/database.ts).
// Deployed, the session/CSRF key ring is read from its Secrets Manager secret (the session
// plugin caches it and reloads it when a signature fails to verify after a rotation). The OpenID
// Connect signing keys come from their own secret, cached for SIGNING_KEY_CACHE_SECONDS.
import awsLambdaFastify from '@fastify/aws-lambda';
import { buildApp } from './app';
import { loadConfig, signingKeyPolicy } from './config';
import { openLambdaDatabase } from './aws/database';
import { withRawQueryString } from './aws/http-api-event';
import { secretsManagerOptions, secretsManagerStore } from './aws/secret-store';
import { secretKeyRingSource } from './aws/session-key-ring';
import { secretSigningKeySource } from './aws/signing-key-secret';

const config = loadConfig(process.env, { trustProxy: true });
const database = openLambdaDatabase(config, { applicationName: 'lanyard-api' });
const aws = config.aws;
const keyRing = aws?.sessionKeysSecretArn
  ? secretKeyRingSource(secretsManagerStore(secretsManagerOptions(aws)), aws.sessionKeysSecretArn)
  : undefined;

const signingKeys = aws?.signingKeysSecretArn
  ? secretSigningKeySource(
      secretsManagerStore(secretsManagerOptions(aws)),
      aws.signingKeysSecretArn,
      signingKeyPolicy(config),
    )
  : undefined;

const proxyPromise = buildApp({ db: database.db, config, keyRing, signingKeys }).then(async (app) => {
  const proxy = awsLambdaFastify(app, { decorateRequest: false });
  await app.ready();
  return proxy;
});
// Reported by the first invocation (a rejected init promise must not crash the runtime early).
proxyPromise.catch(() => undefined);

type Proxy = Awaited<typeof proxyPromise>;

export const handler = async (event: Parameters<Proxy>[0], context: Parameters<Proxy>[1]) =>
  (await proxyPromise)(withRawQueryString(event), context);

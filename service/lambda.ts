// The API function's handler (API Gateway HTTP API payload v2; REST API payload v1 behind the
// `waf` edge) over the same Fastify app as `npm start`. Everything slow happens during init — the
// credentials fetch, Fastify's boot — so the first request does not pay for it. One connection
// per instance (see aws/database.ts). Deployed, the session/CSRF key ring is read from its Secrets
// Manager secret (the session plugin caches it and reloads it when a signature fails to verify).
// The OpenID Connect signing keys come from their own secret, cached for SIGNING_KEY_CACHE_SECONDS.
import { randomUUID } from 'node:crypto';
import awsLambdaFastify from '@fastify/aws-lambda';
import { buildApp } from './app';
import { loadConfig, signingKeyPolicy } from './config';
import { openLambdaDatabase } from './aws/database';
import { apiGatewayRequestId, withRawQueryString } from './aws/http-api-event';
import { precompiledSchemas } from './aws/precompiled-schemas';
import { secretsManagerOptions, secretsManagerStore } from './aws/secret-store';
import { secretKeyRingSource } from './aws/session-key-ring';
import { secretSigningKeySource } from './aws/signing-key-secret';
import { restoredSchemaController } from './precompiled-schemas';

// No proxy trust: request.ip is API Gateway's sourceIp (see aws/http-api-event.ts for why), so a
// client-written X-Forwarded-For cannot pick the key of the per-address failure limit.
const config = loadConfig(process.env, { trustProxy: false });
const database = openLambdaDatabase(config, { applicationName: 'lanyard-api' });
// Connect during init, while Fastify boots: the connection's round trips overlap with the boot
// (buildApp's betweenSteps below lets them progress).
database.connectEarly();
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

/**
 * Carries API Gateway's request id from the event to Fastify's genReqId. Set by this handler on
 * every event (a client-sent header of the same name is dropped first), so it cannot be forged.
 */
const REQUEST_ID_HEADER = 'x-lanyard-apigw-request-id';

const proxyPromise = buildApp({
  // A turn of the event loop between the boot's steps: the early connection's handshake (TCP,
  // TLS, SCRAM: PostgreSQL's side runs on another core) progresses while the routes register.
  betweenSteps: () => new Promise<void>((resolve) => setImmediate(resolve)),
  db: database.db,
  config,
  keyRing,
  signingKeys,
  // Bundled: the validators and serializers generated at build time (no ajv in the bundle).
  schemaController: precompiledSchemas && restoredSchemaController(precompiledSchemas),
  genReqId: (req) => {
    const id = req.headers[REQUEST_ID_HEADER];
    return typeof id === 'string' && id ? id : randomUUID();
  },
}).then(async (app) => {
  const proxy = awsLambdaFastify(app, { decorateRequest: false });
  await app.ready();
  return proxy;
});
// Reported by the first invocation (a rejected init promise must not crash the runtime early).
proxyPromise.catch(() => undefined);

function withRequestId<E>(event: E): E {
  const e = event as { headers?: Record<string, string>; multiValueHeaders?: Record<string, string[]> } | null;
  if (!e || typeof e !== 'object') return event;
  const drop = <V>(h: Record<string, V> | undefined) =>
    Object.fromEntries(Object.entries(h ?? {}).filter(([k]) => k.toLowerCase() !== REQUEST_ID_HEADER));
  const id = apiGatewayRequestId(event);
  const out: Record<string, unknown> = {
    ...e,
    headers: { ...drop(e.headers), ...(id ? { [REQUEST_ID_HEADER]: id } : {}) },
  };
  if (e.multiValueHeaders) out.multiValueHeaders = drop(e.multiValueHeaders);
  return out as E;
}

type Proxy = Awaited<typeof proxyPromise>;

export const handler = async (event: Parameters<Proxy>[0], context: Parameters<Proxy>[1]) =>
  (await proxyPromise)(withRequestId(withRawQueryString(event)), context);

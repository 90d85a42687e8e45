// buildApp({ db, config }): the whole HTTP service, used by the local server, the Lambda handler
// and the tests. Registers plugins and routes explicitly.
import cookie from '@fastify/cookie';
import formbody from '@fastify/formbody';
import Fastify, { type FastifyInstance, type FastifyReply, type FastifyServerOptions } from 'fastify';
import type { AppContext } from './app-context';
import { type Config, signingKeyPolicy, type TrustProxy } from './config';
import type { Db } from './db/schema';
import { apiJsonContentType, isApiPath } from './http/api-content-type';
import { badRequestPage, registerErrorHandlers } from './http/error-handler';
import { answersWithPage } from './http/surface';
import { genReqId, loggerOptions } from './http/logging';
import { headRequests, restoreHeadMethod, routeHeadAsGet } from './http/head-requests';
import { rejectNulBytes } from './http/reject-nul';
import { sessionPlugin } from './http/session';
import type { KeyRingSource } from './domain/service-keys';
import type { SigningKeySource } from './domain/signing-keys';
import { fileKeyRingSource } from './local/service-key-file';
import { fileSigningKeySource } from './local/signing-key-file';
import { apiRoutes } from './routes/api';
import { healthRoutes } from './routes/health';
import { oauthRoutes } from './routes/oauth';
import { webRoutes } from './routes/web';

export interface BuildAppOptions {
  db: Db;
  config: Config;
  /** Override the logger (tests pass false or a stream). */
  logger?: FastifyServerOptions['logger'];
  /** The service key ring; default: LANYARD_HOME/service-keys.json (deployed: Secrets Manager). */
  keyRing?: KeyRingSource;
  /** The OpenID Connect signing keys; default: LANYARD_HOME/signing-keys.json (deployed: Secrets Manager). */
  signingKeys?: SigningKeySource;
  /** The request id (every log line carries it); default a random UUID. On Lambda: API Gateway's. */
  genReqId?: FastifyServerOptions['genReqId'];
  /**
   * The route schema compilers; default Fastify's (ajv, fast-json-stringify, compiling at boot).
   * The API bundle restores code generated at build time instead (precompiled-schemas.ts).
   */
  schemaController?: FastifyServerOptions['schemaController'];
  /**
   * Awaited between the registration steps (none by default). The Lambda handler lets the event
   * loop turn there, so that the database connection it opened first completes its handshake
   * while the routes register, instead of after.
   */
  betweenSteps?: () => Promise<void>;
}

export async function buildApp({
  db,
  config,
  logger,
  keyRing,
  signingKeys,
  genReqId: requestId,
  schemaController,
  betweenSteps = async () => {},
}: BuildAppOptions): Promise<FastifyInstance> {
  const app = Fastify({
    logger: logger ?? loggerOptions(config.logLevel),
    genReqId: requestId ?? genReqId,
    trustProxy: fastifyTrustProxy(config.trustProxy),
    ...(schemaController ? { schemaController } : {}),
    // GitLab full paths arrive URL-encoded in one segment (my-group%2Fsub%2Fproject): one param,
    // and deep nesting makes it long (Fastify's default limit of 100 would answer 414).
    // Up to 16 KB, so that an absurd id is the API's own 404 rather than a router 414 (Node's
    // 16 KB header limit answers anything longer).
    routerOptions: { ignoreTrailingSlash: true, maxParamLength: 16 * 1024 },
    // Router-level failures (a malformed %-escape in the path) go through the root error handler
    // like every other client error, instead of Fastify's default body.
    // (Hooks do not run for them, so the /api/v4 Content-Type is set here too.)
    frameworkErrors: (err, request, reply: FastifyReply) => {
      restoreHeadMethod(request.raw);
      if (answersWithPage(request)) return badRequestPage(reply);
      const body = { message: '400 Bad request' };
      reply.code(err.statusCode ?? 400);
      // Fastify appends a charset to a JSON type unless a reply serializer is set; onSend hooks
      // (which fix /api/v4's type everywhere else) do not run for router-level failures.
      if (isApiPath(request.url)) reply.serializer(JSON.stringify).header('content-type', 'application/json');
      reply.send(body);
    },
    bodyLimit: 1024 * 1024,
    // GET routes answer HEAD without a twin route each (http/head-requests.ts).
    exposeHeadRoutes: false,
    rewriteUrl: routeHeadAsGet,
    // When listening (npm start): a request must be complete within REQUEST_TIMEOUT, its headers
    // within 10 s of that, or Node answers 408 and closes the connection — a client trickling a
    // body cannot hold connections open (issue 22). Checked every second, not Node's default 30 s.
    requestTimeout: config.requestTimeoutSeconds * 1000,
    http: {
      headersTimeout: Math.min(config.requestTimeoutSeconds, 10) * 1000,
      requestTimeout: config.requestTimeoutSeconds * 1000,
      connectionsCheckingInterval: 1000,
    },
  });
  headRequests(app);
  registerErrorHandlers(app);
  apiJsonContentType(app);
  app.decorate('publicOrigin', new URL(config.publicUrl).origin);
  rejectNulBytes(app);
  await app.register(formbody);
  await app.register(cookie);
  await betweenSteps();
  await app.register(sessionPlugin, { db, config, keyRing: keyRing ?? fileKeyRingSource(config.home) });

  const ctx: AppContext = { db, config };
  await app.register(healthRoutes, { db });
  await betweenSteps();
  await app.register(oauthRoutes, {
    ...ctx,
    // Created on first use, not at boot: only OpenID Connect requests need a key.
    signingKeys: signingKeys ?? fileSigningKeySource(config.home, signingKeyPolicy(config)),
  });
  await betweenSteps();
  await app.register(webRoutes, ctx);
  await betweenSteps();
  await app.register(apiRoutes, { ...ctx, prefix: '/api/v4' });
  await betweenSteps();
  return app;
}

/**
 * TRUST_PROXY (config.ts) as Fastify's trustProxy. A list goes to proxy-addr as it is. A hop count
 * becomes proxy-addr's trust function itself — trust the socket's peer and the next n - 1 entries
 * from the right — because Fastify 5.12 turns a bare number into "trust nothing" (it cannot check
 * the immediate peer), which would make every client behind the proxy one address.
 */
function fastifyTrustProxy(trust: TrustProxy): false | string[] | ((address: string, hop: number) => boolean) {
  if (typeof trust === 'number') return trust === 0 ? false : (_address, hop) => hop < trust;
  return trust;
}

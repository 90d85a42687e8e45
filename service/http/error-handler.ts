// The root error handler and not-found handler: the contract's three wire formats (OAuth errors,
// GitLab {"message"} errors, {"error":"404 Not Found"} for unknown /api/v4 routes) and an
// opaque 500 that never leaks a stack, SQL or internals.
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { isDatabaseUnavailable, UNAVAILABLE_RETRY_AFTER_SECONDS } from '../db/unavailable';
import { DomainError } from '../domain/errors';
import { OAuthError, TemporarilyUnavailable } from '../oauth/errors';
import { isApiPath } from './api-content-type';
import { ApiError } from './errors';
import { sendPlainPage } from './plain-page';

const isOAuthPath = (url: string) => url.startsWith('/oauth/');

/**
 * An outage fails every request: one warning when it starts, then at most one a minute saying how
 * many more were answered 503 (no stack, no per-request line: a full disk must not fill the logs).
 */
export const UNAVAILABLE_LOG_INTERVAL_MS = 60_000;

export function registerErrorHandlers(app: FastifyInstance): void {
  let lastLogged = Number.NEGATIVE_INFINITY;
  let suppressed = 0;
  const logUnavailable = (request: FastifyRequest, err: Error) => {
    const now = Date.now();
    if (now - lastLogged < UNAVAILABLE_LOG_INTERVAL_MS) {
      suppressed++;
      return;
    }
    request.log.warn(
      // Not under `err`: pino's error serializer would add a (here empty) stack.
      { database: { code: (err as { code?: unknown }).code, message: err.message }, suppressed },
      'database unavailable: answering 503',
    );
    lastLogged = now;
    suppressed = 0;
  };
  app.setErrorHandler((err: FastifyError | Error, request: FastifyRequest, reply: FastifyReply) => {
    if (err instanceof OAuthError) {
      return reply
        .code(err.statusCode)
        .headers({ 'cache-control': 'no-store', pragma: 'no-cache', ...err.headers })
        .send(err.toJSON());
    }
    if (err instanceof ApiError) {
      return reply.code(err.statusCode).headers(err.headers).send(err.body);
    }
    if (err instanceof DomainError) {
      const status = { invalid: 400, not_found: 404, conflict: 409, forbidden: 403 }[err.kind];
      const message = err.details ?? (err.kind === 'not_found' ? `404 ${err.message}` : err.message);
      return reply.code(status).send({ [err.key]: message });
    }
    const fe = err as FastifyError;
    // Fastify's own client errors: validation, bad JSON, body too large, unsupported media type.
    if (fe.statusCode && fe.statusCode >= 400 && fe.statusCode < 500) {
      if (isOAuthPath(request.url)) {
        const oauth = new OAuthError('invalid_request');
        return reply.code(400).headers({ 'cache-control': 'no-store' }).send(oauth.toJSON());
      }
      const message = fe.validation ? validationMessage(fe) : fe.message;
      if (fe.statusCode === 429) return reply.code(429).send({ message: 'Retry later' });
      return reply.code(fe.statusCode).send(isApiPath(request.url) ? { error: message } : { message });
    }
    if (isDatabaseUnavailable(err)) {
      logUnavailable(request, err);
      return sendUnavailable(request, reply);
    }
    request.log.error({ err }, 'unhandled error');
    return reply.code(500).send({ message: '500 Internal Server Error' });
  });

  app.setNotFoundHandler((request, reply) => {
    if (isApiPath(request.url)) return reply.code(404).send({ error: '404 Not Found' });
    return reply.code(404).send({ message: '404 Not Found' });
  });
}

/**
 * 503 + Retry-After while the database is down, in the shape of the surface asked: the API's
 * {"message"}, OAuth's temporarily_unavailable (Doorkeeper's description), an HTML page for
 * browsers (the web pages and the authorization endpoint).
 */
function sendUnavailable(request: FastifyRequest, reply: FastifyReply) {
  reply.code(503).header('retry-after', String(UNAVAILABLE_RETRY_AFTER_SECONDS)).header('cache-control', 'no-store');
  const path = request.url.split('?')[0];
  if (isApiPath(request.url)) return reply.send({ message: '503 Service Unavailable' });
  if (isOAuthPath(request.url) && path !== '/oauth/authorize') {
    return reply.header('pragma', 'no-cache').send(new TemporarilyUnavailable().toJSON());
  }
  return sendPlainPage(
    reply,
    503,
    'Service unavailable',
    'Lanyard cannot use its database right now. Please try again in a few seconds.',
  );
}

/** GitLab's style for a bad parameter: "<param> is invalid" / "<param> is missing". */
function validationMessage(err: FastifyError): string {
  const first = err.validation?.[0];
  if (!first) return err.message;
  const missing = (first.params as { missingProperty?: string })?.missingProperty;
  if (missing) return `${missing} is missing`;
  const name = first.instancePath.replace(/^\//, '').split('/')[0];
  return name ? `${name} is invalid` : err.message;
}

// The root error handler and not-found handler: the contract's wire formats (OAuth errors,
// GitLab {"message"} errors, {"error":"404 Not Found"} for unknown /api/v4 routes, an HTML page in
// the layout wherever a browser lands: http/surface.ts decides which) and an opaque 500 that never
// leaks a stack, SQL or internals.
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { isDatabaseUnavailable, UNAVAILABLE_RETRY_AFTER_SECONDS } from '../db/unavailable';
import { DomainError } from '../domain/errors';
import { OAuthError, TemporarilyUnavailable } from '../oauth/errors';
import { safeReturnTo } from '../pages/current-user';
import { durationWords, sendErrorPage, sendTooManyRequests } from '../pages/error-page';
import { isApiPath } from './api-content-type';
import { ApiError } from './errors';
import { methodsAnswered } from './head-requests';
import { answersWithPage, surfaceOf } from './surface';

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
  const methodsOf = pageRouteMethods(app);
  app.setErrorHandler((err: FastifyError | Error, request: FastifyRequest, reply: FastifyReply) => {
    const page = answersWithPage(request);
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
      if (page) return sendErrorPage(reply, { status, title: STATUS_TITLES[status], message: err.message });
      const message = err.details ?? (err.kind === 'not_found' ? `404 ${err.message}` : err.message);
      return reply.code(status).send({ [err.key]: message });
    }
    const fe = err as FastifyError;
    // Fastify's own client errors: validation, bad JSON, body too large, unsupported media type.
    if (fe.statusCode && fe.statusCode >= 400 && fe.statusCode < 500) {
      if (surfaceOf(request) === 'oauth') {
        const oauth = new OAuthError('invalid_request');
        return reply.code(400).headers({ 'cache-control': 'no-store' }).send(oauth.toJSON());
      }
      const message = fe.validation ? validationMessage(fe) : fe.message;
      if (page) return clientErrorPage(reply, fe.statusCode, message);
      if (fe.statusCode === 429) return reply.code(429).send({ message: 'Retry later' });
      return reply.code(fe.statusCode).send(isApiPath(request.url) ? { error: message } : { message });
    }
    if (isDatabaseUnavailable(err)) {
      logUnavailable(request, err);
      return sendUnavailable(request, reply);
    }
    request.log.error({ err }, 'unhandled error');
    if (page)
      return sendErrorPage(reply, {
        status: 500,
        title: 'Something went wrong',
        message: 'Lanyard could not complete this request. Nothing you did caused it; please try again in a moment.',
      });
    return reply.code(500).send({ message: '500 Internal Server Error' });
  });

  app.setNotFoundHandler((request, reply) => {
    if (isApiPath(request.url)) return reply.code(404).send({ error: '404 Not Found' });
    if (!answersWithPage(request)) return reply.code(404).send({ message: '404 Not Found' });
    const allowed = methodsOf(request.url);
    if (allowed.length > 0) {
      // RFC 9110 §15.5.6: the path exists, the method does not; Allow lists what does.
      reply.header('allow', allowed.join(', '));
      return sendErrorPage(reply, {
        status: 405,
        title: 'Method not allowed',
        message: `This page cannot be used with ${request.method}. Follow a link or use the page’s own form instead.`,
      });
    }
    return sendErrorPage(reply, {
      status: 404,
      title: 'Page not found',
      message:
        'There is no page at this address. Check the address for typing errors, or start again from your account.',
    });
  });
}

const STATUS_TITLES: Record<number, string> = {
  400: 'Bad request',
  403: 'Forbidden',
  404: 'Page not found',
  409: 'This change cannot be made now',
  413: 'Request too large',
  415: 'Unsupported form',
};

/** A request the router cannot read (a malformed %-escape in the path), on a page path. */
export const badRequestPage = (reply: FastifyReply) => clientErrorPage(reply, 400, 'the address is malformed');

/** A client error on a page path (a bad parameter, a NUL, a body too large) as the 400-family page. */
function clientErrorPage(reply: FastifyReply, status: number, message: string) {
  if (status === 429) {
    const retryAfter = Number(reply.getHeader('retry-after')) || 60;
    return sendTooManyRequests(reply, retryAfter, 'Too many requests');
  }
  return sendErrorPage(reply, {
    status,
    title: STATUS_TITLES[status] ?? 'Bad request',
    message: `Lanyard could not read this request: ${message}. Check the address or go back to the page and try again.`,
  });
}

/**
 * The methods each page route answers, recorded as routes are added (onRoute), so that a page path
 * asked with another method is a 405 with Allow rather than a 404. /api/v4 keeps GitLab's 404.
 */
function pageRouteMethods(app: FastifyInstance): (url: string) => string[] {
  // Each route's pattern is compiled on the first look-up, not as the route registers: a cold
  // start registers every route and may never need one.
  const routes: Array<{ url: string; method: string; pattern?: RegExp }> = [];
  app.addHook('onRoute', (route) => {
    if (isApiPath(route.url) || route.url === '*') return;
    for (const method of methodsAnswered(route.method)) routes.push({ url: route.url, method });
  });
  const patternOf = (url: string) => {
    const source = url
      .split('/')
      .map((segment) =>
        segment.startsWith(':') ? '[^/]+' : segment === '*' ? '.*' : segment.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'),
      )
      .join('/');
    return new RegExp(`^${source}/?$`);
  };
  return (url) => {
    const path = url.split(/[?#]/)[0];
    const matches = (r: (typeof routes)[number]) => {
      r.pattern ??= patternOf(r.url);
      return r.pattern.test(path);
    };
    return [...new Set(routes.filter(matches).map((r) => r.method))].sort();
  };
}

/**
 * 503 + Retry-After while the database is down, in the shape of the surface asked: the API's
 * {"message"}, OAuth's temporarily_unavailable (Doorkeeper's description), an HTML page for
 * browsers (the web pages and the authorization endpoint).
 */
function sendUnavailable(request: FastifyRequest, reply: FastifyReply) {
  reply.code(503).header('retry-after', String(UNAVAILABLE_RETRY_AFTER_SECONDS)).header('cache-control', 'no-store');
  const surface = surfaceOf(request);
  if (surface === 'api') return reply.send({ message: '503 Service Unavailable' });
  if (surface === 'oauth') return reply.header('pragma', 'no-cache').send(new TemporarilyUnavailable().toJSON());
  if (!answersWithPage(request)) return reply.send({ message: '503 Service Unavailable' });
  return sendErrorPage(reply, {
    status: 503,
    title: 'Service unavailable',
    message: `Lanyard cannot use its database right now. Please try again in ${durationWords(UNAVAILABLE_RETRY_AFTER_SECONDS)}.`,
    back: { href: (request.method === 'GET' && safeReturnTo(request.url)) || '/', label: 'Try again' },
  });
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

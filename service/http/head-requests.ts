// HEAD (RFC 9110 §9.3.2): every GET route answers HEAD with GET's status and headers and no body.
// Fastify's own way (exposeHeadRoutes) registers a twin route per GET route — the same handler,
// hooks and schemas, the body dropped by an onSend hook appended last — which the API function
// paid at every cold start for ~200 routes (their contexts, hooks, router entries: ~3 % of its
// first response, docs/benchmarks.md). Here there are no twins: in front of the router, a HEAD
// request for a path that has a GET route and no HEAD route of its own is looked up as GET, and
// the request is HEAD again from the first onRequest hook on, so hooks, handlers and logs see HEAD.
// The GET routes carry the twin's onSend hook (last of their own), which drops the body for HEAD.
// Both the local server and the Lambda adapter (light-my-request) go through Fastify's routing,
// so both answer the same; the transports send no body for HEAD either way.
import type { IncomingMessage } from 'node:http';
import type { FastifyInstance, FastifyRequest, onSendHookHandler } from 'fastify';

const routedAsGet = Symbol('lanyard.head-routed-as-get');

type RawRequest = IncomingMessage & { [routedAsGet]?: boolean };

/** The methods a route answers: a GET route answers HEAD too (for the 405 page's Allow). */
export function methodsAnswered(method: string | readonly string[]): string[] {
  const methods = [method].flat();
  return methods.includes('GET') && !methods.includes('HEAD') ? [...methods, 'HEAD'] : methods;
}

/**
 * Fastify's `rewriteUrl` (it runs before every router look-up, the URL unchanged): a HEAD request
 * that only a GET route matches is looked up as GET.
 */
export function routeHeadAsGet(this: FastifyInstance, req: RawRequest): string {
  const url = req.url ?? '/';
  if (
    req.method === 'HEAD' &&
    this.findRoute({ method: 'HEAD', url }) === null &&
    this.findRoute({ method: 'GET', url }) !== null
  ) {
    req.method = 'GET';
    req[routedAsGet] = true;
  }
  return url;
}

/** The method the client sent (for the request log line, written before the first hook runs). */
export function requestMethod(request: { method: string; raw?: RawRequest }): string {
  return request.raw?.[routedAsGet] === true ? 'HEAD' : request.method;
}

/**
 * The request is HEAD again once routed. Also called by the router-level error path (a malformed
 * path found as GET), which runs no hooks.
 */
export function restoreHeadMethod(raw: RawRequest): void {
  if (raw[routedAsGet] !== true) return;
  raw.method = 'HEAD';
  raw[routedAsGet] = false;
}

/** Fastify's HEAD twin's onSend hook (fastify/lib/head-route.js): the length of what GET sends, no body. */
const dropHeadBody: onSendHookHandler = (request, reply, payload, done) => {
  if (request.method !== 'HEAD') {
    done(null, payload);
    return;
  }
  if (payload === undefined) {
    reply.header('content-length', '0');
  } else if (typeof (payload as { resume?: unknown }).resume === 'function') {
    const stream = payload as NodeJS.ReadableStream;
    stream.on('error', (err) => reply.log.error({ err }, 'Error on Stream found for HEAD route'));
    stream.resume();
  } else if (typeof (payload as { getReader?: unknown }).getReader === 'function') {
    (payload as ReadableStream).cancel('Stream cancelled by HEAD route').catch((err) => {
      reply.log.error({ err }, 'Error on Stream found for HEAD route');
    });
  } else {
    reply.header('content-length', `${Buffer.byteLength(payload as string | Buffer)}`);
  }
  done(null, null);
};

/**
 * The hooks that make GET routes answer HEAD; registered first on the root instance (the app is
 * built with `exposeHeadRoutes: false` and `rewriteUrl: routeHeadAsGet`).
 */
export function headRequests(app: FastifyInstance): void {
  app.addHook('onRequest', (request: FastifyRequest, _reply, done) => {
    restoreHeadMethod(request.raw);
    done();
  });
  app.addHook('onRoute', (route) => {
    if (![route.method].flat().includes('GET')) return;
    route.onSend = [...(route.onSend ? [route.onSend].flat() : []), dropHeadBody];
  });
}

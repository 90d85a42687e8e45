// The Content-Type of JSON answers under /api/v4: exactly `application/json`, as GitLab's Grape API
// sends it (contract §1). python-gitlab before 3.14 compares the header byte for byte and parses
// nothing else, so `; charset=utf-8` (Fastify's default, kept for /oauth/* as Doorkeeper sends it)
// would break every call. A root hook, so errors and unknown routes answer the same way.
import type { FastifyInstance } from 'fastify';

export const isApiPath = (url: string): boolean =>
  url === '/api/v4' || url.startsWith('/api/v4/') || url.startsWith('/api/v4?');

export function apiJsonContentType(app: FastifyInstance): void {
  // A callback hook, not an async one: it runs on every response and awaits nothing.
  app.addHook('onSend', (request, reply, payload, done) => {
    if (isApiPath(request.url)) {
      const type = reply.getHeader('content-type');
      if (typeof type === 'string' && type.startsWith('application/json'))
        reply.header('content-type', 'application/json');
    }
    done(null, payload);
  });
}

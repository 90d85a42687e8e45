// An empty body labelled `Content-Type: application/json` is no body, as Rails/Grape reads it:
// python-gitlab sends its DELETEs (and body-less POSTs) that way, and Fastify's JSON parser would
// refuse them with 400 "Body cannot be empty". Anything non-empty goes to Fastify's own parser
// (prototype-poisoning checks included). Registered on the /api/v4 plugin only.
import type { FastifyInstance } from 'fastify';

export function acceptEmptyJsonBodies(app: FastifyInstance): void {
  const parseJson = app.getDefaultJsonParser('error', 'error');
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (request, body, done) => {
    if (body === '') return done(null, undefined);
    return parseJson(request, body as string, done);
  });
}

// An empty body sent as `Content-Type: application/json` is no body, as GitLab's Grape reads it.
// python-gitlab sends exactly that on DELETE and on a POST without data (renew-secret), and
// Fastify's JSON parser refuses it (FST_ERR_CTP_EMPTY_JSON_BODY). Anything else still goes through
// Fastify's own parser (prototype-poisoning checks included). Applied to the plugins that need it.
import type { FastifyInstance } from 'fastify';

export function acceptEmptyJsonBody(app: FastifyInstance): void {
  const parseJson = app.getDefaultJsonParser('error', 'error');
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (request, body, done) => {
    if (body === '') return done(null, undefined);
    return parseJson(request, body as string, done);
  });
}

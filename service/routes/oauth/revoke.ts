// POST /oauth/revoke (RFC 7009). 200 {} also for unknown tokens (§2.2: nothing to learn from
// it); a confidential application's token needs that application's credentials (403 otherwise).
import type { FastifyInstance } from 'fastify';
import type { AppContext } from '../../app-context';
import { findApplicationById } from '../../domain/applications';
import {
  findAccessTokenByRefreshToken,
  findAccessTokenByToken,
  revokeAccessToken,
  revokeTokenFamily,
} from '../../domain/oauth-tokens';
import { mergedParams, nonScalarParam, stringParam } from '../../shared/params';
import { authenticateClient, CLIENT_PARAMETERS, readClientCredentials } from '../../oauth/client-auth';
import { InvalidRequest, RevocationForbidden } from '../../oauth/errors';

export async function revokeRoutes(app: FastifyInstance, { db }: AppContext) {
  app.post(
    '/oauth/revoke',
    { schema: { response: { 200: { type: 'object', properties: {}, additionalProperties: false } } } },
    async (request, reply) => {
      const params = mergedParams(request);
      if (nonScalarParam(params, ['token', 'token_type_hint', ...CLIENT_PARAMETERS])) throw new InvalidRequest();
      const token = stringParam(params, 'token');
      if (!token) throw new InvalidRequest();
      const credentials = readClientCredentials(request, params);
      // A bare client_id proves nothing: only a secret authenticates a client here.
      const client =
        credentials?.clientSecret !== undefined ? await authenticateClient(db, credentials, request.ip) : undefined;

      // §2.1: the hint decides which kind is looked up first; both are tried.
      const refreshFirst = stringParam(params, 'token_type_hint') === 'refresh_token';
      const lookups = [
        { kind: 'access', find: () => findAccessTokenByToken(db, token) },
        { kind: 'refresh', find: () => findAccessTokenByRefreshToken(db, token) },
      ];
      if (refreshFirst) lookups.reverse();
      for (const { kind, find } of lookups) {
        const row = await find();
        if (!row) continue;
        const application = row.application_id === null ? undefined : await findApplicationById(db, row.application_id);
        if (application?.confidential && client?.application.id !== application.id) throw new RevocationForbidden();
        // One row is the pair: revoking either token revokes both. A refresh token ends its
        // whole grant: the earlier access tokens of the chain too (RFC 7009 §2.1).
        if (kind === 'refresh') await revokeTokenFamily(db, row);
        else await revokeAccessToken(db, row.id);
        break;
      }
      return reply.header('cache-control', 'no-store').send({});
    },
  );
}

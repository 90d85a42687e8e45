// POST /oauth/introspect (RFC 7662): an authenticated confidential client asks whether a token is
// live. Anything not live — unknown, expired, revoked, used, a blocked user's, another
// application's — is {"active":false} alone (§2.2: nothing else is disclosed).
import type { FastifyInstance } from 'fastify';
import type { OAuthRoutesContext } from '.';
import { inspectOAuthToken } from '../../domain/access-tokens';
import { formatScopes } from '../../domain/scopes';
import { mergedParams, nonScalarParam, stringParam } from '../../shared/params';
import { authenticateClient, BASIC_REALM, readClientCredentials } from '../../oauth/client-auth';
import { InvalidClient, InvalidRequest } from '../../oauth/errors';

const int = { type: 'integer' } as const;
const str = { type: 'string' } as const;
const introspectionSchema = {
  type: 'object',
  properties: {
    active: { type: 'boolean' },
    scope: str,
    client_id: str,
    username: str,
    token_type: str,
    exp: int,
    iat: int,
    sub: str,
    // RFC 7662 §2.2 / RFC 7519 §4.1.3: one identifier, or several.
    // A string, or an array of them (RFC 7662 §2.2). No anyOf: fast-json-stringify numbers anyOf
    // validators with a process-wide counter, which made the Lambda bundle differ between builds.
    aud: { description: 'The audience: a string, or an array of strings' },
    iss: str,
    // RFC 9449 §6.2: the key a DPoP-bound access token is bound to.
    cnf: { type: 'object', properties: { jkt: str }, required: ['jkt'], additionalProperties: false },
  },
  required: ['active'],
  additionalProperties: false,
} as const;

export async function introspectRoutes(app: FastifyInstance, { db, config }: OAuthRoutesContext) {
  app.post('/oauth/introspect', { schema: { response: { 200: introspectionSchema } } }, async (request, reply) => {
    reply.header('cache-control', 'no-store').header('pragma', 'no-cache');
    const params = mergedParams(request);
    const credentials = readClientCredentials(request, params);
    // §2.1: the endpoint requires client authentication; a public client_id authenticates nobody.
    if (!credentials) throw new InvalidClient();
    const client = await authenticateClient(db, credentials, request.ip);
    if (client.method === 'none') throw new InvalidClient(credentials.basic ? BASIC_REALM : undefined);
    if (nonScalarParam(params, ['token', 'token_type_hint'])) throw new InvalidRequest();
    const token = stringParam(params, 'token');
    if (!token) throw new InvalidRequest();
    const inspected = await inspectOAuthToken(db, token, true);
    const t = inspected.token;
    // A token of another application is not this client's to learn about (Doorkeeper's rule),
    // unless it is bound to resources (RFC 8707): then the resource servers it was issued for — any
    // confidential client, who must check `aud` — introspect it (RFC 7662 §1). Its bearer learns as
    // much from /oauth/token/info, so this discloses nothing new to whoever holds the token.
    const othersToken = t !== undefined && t.applicationId !== null && t.applicationId !== client.application.id;
    if (inspected.status !== 'live' || !t || (othersToken && t.audience.length === 0))
      return reply.send({ active: false });
    return reply.send({
      active: true,
      scope: formatScopes(t.scopes),
      client_id: t.clientId ?? undefined,
      // An application's own token (client_credentials) has no user: no username, no sub.
      username: t.user?.username,
      token_type: inspected.kind === 'access_token' ? (t.dpopJkt ? 'DPoP' : 'Bearer') : 'refresh_token',
      // A refresh token lives until used or revoked: no exp.
      exp: inspected.kind === 'access_token' ? Math.floor(t.expiresAt.getTime() / 1000) : undefined,
      iat: Math.floor(t.createdAt.getTime() / 1000),
      sub: t.user ? String(t.user.id) : undefined,
      // RFC 8707: a bound token's audience is its resources; an unbound one's, its client (as before).
      aud: t.audience.length > 1 ? t.audience : (t.audience[0] ?? t.clientId ?? undefined),
      iss: config.publicUrl,
      cnf: inspected.kind === 'access_token' && t.dpopJkt ? { jkt: t.dpopJkt } : undefined,
    });
  });
}

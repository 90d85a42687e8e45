// GET /oauth/token/info: Doorkeeper's token introspection for the bearer of the token.
import type { FastifyInstance } from 'fastify';
import type { AppContext } from '../../app-context';
import { findApplicationById } from '../../domain/applications';
import { findTokenRecord } from '../../domain/access-tokens';
import { sortScopes } from '../../domain/scopes';
import { bearerFromHeader } from '../../http/authenticate';
import { checkResourceProof, consumeResourceProof, dpopTokenFromHeader } from '../../http/dpop';
import { nonScalarParam } from '../../shared/params';
import { InvalidToken } from '../../oauth/errors';

const tokenInfoSchema = {
  type: 'object',
  properties: {
    resource_owner_id: { type: ['integer', 'null'] },
    scope: { type: 'array', items: { type: 'string' } },
    expires_in: { type: 'integer' },
    application: {
      type: 'object',
      properties: { uid: { type: ['string', 'null'] } },
      required: ['uid'],
      additionalProperties: false,
    },
    created_at: { type: 'integer' },
    scopes: { type: 'array', items: { type: 'string' } },
    expires_in_seconds: { type: 'integer' },
    aud: { type: 'array', items: { type: 'string' } },
  },
  required: ['resource_owner_id', 'scope', 'expires_in', 'application', 'created_at', 'scopes', 'expires_in_seconds'],
  additionalProperties: false,
} as const;

/** RFC 6750 §2.1 header, else §2.3 query parameter. */
function bearerToken(authorization: string | undefined, query: unknown): string | undefined {
  const fromHeader = bearerFromHeader(authorization);
  if (fromHeader) return fromHeader;
  const params = (query ?? {}) as Record<string, unknown>;
  // A repeated or bracketed access_token is no token (RFC 6750 §2.3: one value).
  if (nonScalarParam(params, ['access_token'])) return undefined;
  const q = params.access_token;
  return typeof q === 'string' && q ? q : undefined;
}

export async function tokenInfoRoutes(app: FastifyInstance, { db, config }: AppContext) {
  app.get('/oauth/token/info', { schema: { response: { 200: tokenInfoSchema } } }, async (request, reply) => {
    const dpopToken = dpopTokenFromHeader(request.headers.authorization);
    const token = dpopToken ?? bearerToken(request.headers.authorization, request.query);
    // The same look-up as API authentication, and its blocked-user rule (the API answers 403):
    // a blocked user's token is not valid here either. An application's own token
    // (client_credentials) has no resource owner: null, as Doorkeeper answers.
    const row = token ? await findTokenRecord(db, 'oauth_access_token', token) : undefined;
    if (row?.kind !== 'oauth_access_token' || row.expired || row.revoked || (row.user && row.user.state !== 'active')) {
      const err = new InvalidToken();
      err.headers['WWW-Authenticate'] =
        'Bearer realm="Doorkeeper", error="invalid_token", error_description="The access token is invalid"';
      throw err;
    }
    // RFC 9449 §7: a bound token needs the DPoP scheme and a proof of its key.
    const proof = await checkResourceProof(request, {
      dpopScheme: dpopToken !== undefined,
      token: token as string,
      boundJkt: row.dpopJkt,
      publicUrl: config.publicUrl,
      requireNonce: config.dpopRequireNonce,
    });
    const application = row.applicationId === null ? undefined : await findApplicationById(db, row.applicationId);
    const remaining = Math.max(0, Math.round((row.expiresAt.getTime() - Date.now()) / 1000));
    const scopes = sortScopes(row.scopes);
    await consumeResourceProof(db, proof);
    return reply.header('cache-control', 'no-store').send({
      resource_owner_id: row.user?.id ?? null,
      scope: scopes,
      expires_in: remaining,
      application: { uid: application?.uid ?? null },
      created_at: Math.floor(row.createdAt.getTime() / 1000),
      scopes,
      expires_in_seconds: remaining,
      // RFC 8707: only a token bound to resources has an audience (Doorkeeper's body otherwise).
      aud: row.audience.length > 0 ? row.audience : undefined,
    });
  });
}

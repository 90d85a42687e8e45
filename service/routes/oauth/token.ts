// POST /oauth/token (RFC 6749 §3.2): client authentication, then the grant named by grant_type,
// looked up in the grant table. Success and errors carry Cache-Control: no-store (§5.1).
import type { FastifyInstance, FastifyReply } from 'fastify';
import type { OAuthRoutesContext } from '.';
import { mergedParams, nonScalarParam, repeatedParam, stringParam } from '../../shared/params';
import { authenticateClient, CLIENT_PARAMETERS, readClientCredentials } from '../../oauth/client-auth';
import { InvalidClient, InvalidRequest, UnsupportedGrantType } from '../../oauth/errors';
import { GRANTS } from '../../oauth/grants';
import type { GrantContext, GrantResult } from '../../oauth/grants/types';
import { formatScopes } from '../../domain/scopes';
import { issueIdToken } from '../../oauth/id-token';
import { tokenRequestProof, withConsumedProof } from '../../oauth/dpop';
import { requestedResources } from '../../oauth/resource';

export const tokenResponseSchema = {
  type: 'object',
  properties: {
    access_token: { type: 'string' },
    token_type: { type: 'string' },
    expires_in: { type: 'integer' },
    refresh_token: { type: 'string' },
    scope: { type: 'string' },
    created_at: { type: 'integer' },
    id_token: { type: 'string' },
  },
  // No `required`: fast-json-stringify writes required members first, which would move
  // refresh_token after created_at; the handler always sends the others.
  additionalProperties: false,
} as const;

export async function tokenRoutes(app: FastifyInstance, { db, config, signingKeys }: OAuthRoutesContext) {
  const signIdToken: GrantContext['signIdToken'] = (trx, input) =>
    issueIdToken(trx, signingKeys, {
      ...input,
      issuer: config.publicUrl,
      lifetimeSeconds: config.idTokenLifetimeSeconds,
    });
  const idTokenKeyReady = () =>
    signingKeys.load().then(
      () => true,
      () => false,
    );
  app.post('/oauth/token', { schema: { response: { 200: tokenResponseSchema } } }, async (request, reply) => {
    const receivedAt = new Date();
    const params = mergedParams(request);
    if (nonScalarParam(params, ['grant_type', ...CLIENT_PARAMETERS])) throw new InvalidRequest();
    const grantType = stringParam(params, 'grant_type');
    if (!grantType) throw new InvalidRequest();
    const grant = GRANTS.get(grantType);
    if (!grant) throw new UnsupportedGrantType();
    // RFC 6749 §3.1: request parameters must not be repeated.
    const values: Record<string, string | undefined> = {};
    if (nonScalarParam(params, grant.parameters)) throw new InvalidRequest();
    for (const name of grant.parameters) values[name] = stringParam(params, name);
    const credentials = readClientCredentials(request, params);
    // A client secret checked by the grant's own statement (one round trip), when nothing else
    // needs the client first: no DPoP proof to check, no `resource` to allow.
    if (
      grant.withClientSecret &&
      credentials?.clientSecret !== undefined &&
      request.headers.dpop === undefined &&
      repeatedParam(params, 'resource')?.length === 0
    ) {
      const issued = await grant.withClientSecret({
        db,
        params: values,
        credentials: { ...credentials, clientSecret: credentials.clientSecret },
        address: request.ip,
        receivedAt,
        refreshReuseLeeway: config.refreshReuseLeeway,
        signIdToken,
        idTokenKeyReady,
      });
      if (issued) return sendTokens(reply, issued, false);
    }
    const client = credentials ? await authenticateClient(db, credentials, request.ip) : undefined;
    if (!client && grant.clientAuthentication === 'required') throw new InvalidClient();
    // RFC 8707: every grant takes `resource` (repeatable); each must be allowed to the client.
    const resources = requestedResources(params, client?.application.allowed_resources ?? null, config.publicUrl);
    const requiresDpop = client?.application.dpop_bound_access_tokens === true;
    const proof = await tokenRequestProof({
      header: request.headers.dpop,
      // RFC 9449 §4.3: the URL the client addressed, PUBLIC_URL's (a proxy or API Gateway in front).
      url: `${config.publicUrl}/oauth/token`,
      ring: () => request.server.sessions.keyRing().load(),
      requireNonce: config.dpopRequireNonce || requiresDpop,
      required: requiresDpop,
    });
    const issued = await withConsumedProof(db, proof, () =>
      grant.handler({
        db,
        params: values,
        resources,
        client,
        address: request.ip,
        receivedAt,
        refreshReuseLeeway: config.refreshReuseLeeway,
        dpopJkt: proof?.jkt,
        signIdToken,
        idTokenKeyReady,
      }),
    );
    return sendTokens(reply, issued, proof !== undefined);
  });
}

/** The token response (RFC 6749 §5.1), never cached. */
function sendTokens(reply: FastifyReply, issued: GrantResult, dpopBound: boolean) {
  return reply.headers({ 'cache-control': 'no-store', pragma: 'no-cache' }).send({
    access_token: issued.accessToken,
    // RFC 9449 §5: a bound token is a DPoP token.
    token_type: dpopBound ? 'DPoP' : 'bearer',
    expires_in: issued.expiresIn,
    refresh_token: issued.refreshToken,
    scope: formatScopes(issued.scopes),
    created_at: Math.floor(issued.createdAt.getTime() / 1000),
    id_token: issued.idToken,
  });
}

// GET|POST /oauth/userinfo (OIDC Core §5.3): the claims of the token's scopes as JSON (no
// groups_direct, as GitLab). The token comes as RFC 6750 §2.1 Bearer header, or §2.2 form body /
// §2.3 query `access_token`. Errors are RFC 6750 §3.1 with Doorkeeper's descriptions.
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { OAuthRoutesContext } from '.';
import { userClaims } from '../../domain/oidc-claims';
import { inspectOAuthToken } from '../../domain/access-tokens';
import { bearerFromHeader } from '../../http/authenticate';
import { checkResourceProof, consumeResourceProof, dpopTokenFromHeader } from '../../http/dpop';
import { mergedParams, nonScalarParam, stringParam } from '../../shared/params';
import { OAuthError } from '../../oauth/errors';

const REALM = 'Doorkeeper';
const INVALID = {
  unknown: 'The access token is invalid',
  expired: 'The access token expired',
  revoked: 'The access token was revoked',
} as const;
const INSUFFICIENT_SCOPE = 'The request requires higher privileges than provided by the access token.';

function invalidToken(description: string): OAuthError {
  const err = new OAuthError('invalid_token', 401, description);
  err.headers['WWW-Authenticate'] =
    `Bearer realm="${REALM}", error="invalid_token", error_description="${description}"`;
  return err;
}

export async function userinfoRoutes(app: FastifyInstance, { db, config }: OAuthRoutesContext) {
  async function handler(request: FastifyRequest, reply: FastifyReply) {
    reply.header('cache-control', 'no-store');
    const params = mergedParams(request);
    // A repeated or nested access_token names no token (as at token info): the invalid_token answer.
    const dpopToken = dpopTokenFromHeader(request.headers.authorization);
    const token =
      dpopToken ??
      bearerFromHeader(request.headers.authorization) ??
      (nonScalarParam(params, ['access_token']) ? undefined : stringParam(params, 'access_token'));
    const inspected = token ? await inspectOAuthToken(db, token) : { status: 'unknown' as const };
    if (inspected.status === 'expired') throw invalidToken(INVALID.expired);
    if (inspected.status === 'revoked') throw invalidToken(INVALID.revoked);
    if (inspected.status !== 'live' || !inspected.token || !token) throw invalidToken(INVALID.unknown);
    // RFC 9449 §7: a bound token needs the DPoP scheme and a proof of its key.
    const proof = await checkResourceProof(request, {
      dpopScheme: dpopToken !== undefined,
      token,
      boundJkt: inspected.token.dpopJkt,
      publicUrl: config.publicUrl,
      requireNonce: config.dpopRequireNonce,
    });
    const { user, scopes } = inspected.token;
    // An application's own token never holds openid (client_credentials refuses it), nor a user.
    if (!scopes.includes('openid') || !user) {
      const err = new OAuthError('insufficient_scope', 403, INSUFFICIENT_SCOPE);
      err.headers['WWW-Authenticate'] =
        `Bearer realm="${REALM}", error="insufficient_scope", error_description="${INSUFFICIENT_SCOPE}", scope="openid"`;
      throw err;
    }
    const claims = await userClaims(db, user, scopes, config.publicUrl, 'userinfo');
    await consumeResourceProof(db, proof);
    return reply.send(claims);
  }
  app.get('/oauth/userinfo', handler);
  app.post('/oauth/userinfo', handler);
}

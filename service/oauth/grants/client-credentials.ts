// grant_type=client_credentials (RFC 6749 §4.4): an application's own token, for services that act
// for no user. Confidential applications only (§4.4: "MUST only be used by confidential clients";
// a public one is unauthorized_client). The scopes narrow the application's; none asked for means
// all it registered, less the OpenID Connect ones (they describe a user, and there is none). No
// refresh token (§4.4.3) and no user: /api/v4 answers such a token as GitLab does (401), except
// where a route takes an application scope (`notify`). A wrong secret counts against the client
// address like every client authentication (client-auth.ts).
import { OIDC_SCOPES } from '../../domain/scopes';
import { issueAccessToken } from '../../domain/oauth-tokens';
import { UnauthorizedClient } from '../errors';
import { resolveScopes } from '../scope';
import type { Grant, GrantContext, GrantResult } from './types';

export const grantType = 'client_credentials';
export const parameters = ['scope'] as const;

export const clientAuthentication: Grant['clientAuthentication'] = 'required';

/** What an application's own token may hold: every scope it registered but the identity ones. */
const applicationTokenScopes = (registered: readonly string[]): string[] =>
  registered.filter((s) => !(OIDC_SCOPES as readonly string[]).includes(s));

export async function handler({ db, params, client, resources, dpopJkt }: GrantContext): Promise<GrantResult> {
  const { application, method } = client!;
  if (method === 'none' || !application.confidential) throw new UnauthorizedClient();
  const scopes = resolveScopes(params.scope, applicationTokenScopes(application.scopes));
  // RFC 8707: the token is for the resources named (allowed to the application), unbound without.
  return issueAccessToken(db, {
    applicationId: application.id,
    userId: null,
    scopes,
    withRefreshToken: false,
    dpopJkt,
    resources,
  });
}

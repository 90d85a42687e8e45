// grant_type=password (RFC 6749 §4.3). Client credentials are optional (validated when sent).
// Refused with the one generic invalid_grant for a wrong password, a locked, blocked or
// two-factor user: the response never says which. No refresh token (GitLab's behaviour).
// A public client naming itself by client_id alone is refused (unauthorized_client): a public
// client_id is no credential, so anyone could mint password-grant tokens in that app's name.
// Scripts that have no application send no client_id at all.
import { API_SCOPES, userGrantableScopes } from '../../domain/scopes';
import { issueAccessToken } from '../../domain/oauth-tokens';
import { checkPassword } from '../../domain/sign-in';
import { needsSecondFactor } from '../../domain/users';
import { InvalidGrant, InvalidRequest, TooManyRequests, UnauthorizedClient } from '../errors';
import { resolveScopes } from '../scope';
import type { Grant, GrantContext, GrantResult } from './types';

export const grantType = 'password';
export const parameters = ['username', 'password', 'scope'] as const;

export const clientAuthentication: Grant['clientAuthentication'] = 'optional';

export async function handler({ db, params, client, address, resources, dpopJkt }: GrantContext): Promise<GrantResult> {
  const { username, password } = params;
  if (!username || !password) throw new InvalidRequest();
  if (client?.method === 'none') throw new UnauthorizedClient();
  const scopes = resolveScopes(params.scope, userGrantableScopes(client?.application.scopes ?? API_SCOPES));
  const result = await checkPassword(db, { login: username, password, address });
  if (!result.ok) {
    if (result.reason === 'rate_limited') throw new TooManyRequests(result.throttle);
    throw new InvalidGrant();
  }
  if (needsSecondFactor(result.user)) throw new InvalidGrant();
  return issueAccessToken(db, {
    applicationId: client?.application.id ?? null,
    userId: result.user.id,
    scopes,
    withRefreshToken: false,
    dpopJkt,
    resources,
  });
}

// grant_type=refresh_token (RFC 6749 §6) with rotation: a new access and refresh token, the old
// refresh token dies, the old access token lives until it expires (concurrent clients do not
// race: GitLab #372358). The row is locked, so of concurrent refreshes exactly one wins; a
// replayed refresh token revokes every token descended from it (RFC 9700 §4.14.2).
//
// Replay vs. race: a request that was already in flight when the token got rotated (the
// rotation is newer than the request's arrival) lost a race against another process of the
// same client: it is refused, and the winner's new tokens stay valid. A request arriving after
// the rotation is a replay and revokes the descendants. (Authorization codes get no such
// allowance: a client never legitimately exchanges one code twice.)
import { findAuthorizationCodeAuthTime } from '../../domain/authorization-codes';
import { revokeDescendants, rotateRefreshToken } from '../../domain/oauth-tokens';
import { parseScopeString, sortScopes } from '../../domain/scopes';
import { findUserById } from '../../domain/users';
import { InvalidClient, InvalidGrant, InvalidRequest } from '../errors';
import { resolveScopes } from '../scope';
import type { Grant, GrantContext, GrantResult } from './types';

export const grantType = 'refresh_token';
export const parameters = ['refresh_token', 'scope'] as const;

// A public client's token refreshes with no credentials; a confidential one's needs them (below).
export const clientAuthentication: Grant['clientAuthentication'] = 'optional';

// A scope that no token holds: an unknown requested scope can never be a subset, so the rotation
// is refused and resolveScopes below reports invalid_scope (after the grant's own checks, as before).
const NO_SUCH_SCOPE = ['\u0000'];

export async function handler({ db, params, client, receivedAt }: GrantContext): Promise<GrantResult> {
  const refreshToken = params.refresh_token;
  if (!refreshToken) throw new InvalidRequest();
  const requested = params.scope?.trim() ? parseScopeString(params.scope) : undefined;
  // One statement locks, checks, rotates and issues (domain/oauth-tokens.ts).
  const { old, issued } = await rotateRefreshToken(db, {
    refreshToken,
    applicationId: client?.application.id,
    scopes: requested === undefined ? undefined : requested ? sortScopes(requested) : NO_SUCH_SCOPE,
    at: new Date(),
  });
  if (issued) {
    if (!issued.scopes.includes('openid')) return issued;
    // OIDC Core §12.2: an ID token too (read after the rotation: only OpenID refreshes pay for it);
    // auth_time stays the original sign-in's; no nonce (no authorization request).
    const rotated = old!;
    const user = (await findUserById(db, rotated.user_id))!;
    const authTime =
      (rotated.authorization_code_id === null
        ? undefined
        : await findAuthorizationCodeAuthTime(db, rotated.authorization_code_id)) ??
      user.current_sign_in_at ??
      rotated.created_at;
    return { ...issued, idToken: { clientId: rotated.application_uid!, user, authTime } };
  }
  if (!old || old.application_id === null) throw new InvalidGrant();
  if (client) {
    if (client.application.id !== old.application_id) throw new InvalidGrant();
  } else if (old.application_confidential !== false) {
    throw new InvalidClient();
  }
  if (old.revoked_at) throw new InvalidGrant();
  if (old.refreshed_at) {
    // Rotated before this request arrived: a replay. Rotated while it was in flight: a lost race.
    if (old.refreshed_at.getTime() < receivedAt.getTime()) await revokeDescendants(db, old.id);
    throw new InvalidGrant();
  }
  resolveScopes(params.scope, old.scopes); // throws invalid_scope when the scopes were the reason
  throw new InvalidGrant(); // the user is not active
}

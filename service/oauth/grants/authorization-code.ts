// grant_type=authorization_code (RFC 6749 §4.1.3, RFC 7636 §4.5). The code's row is locked for
// the exchange, so of concurrent exchanges exactly one finds it unused; a replay revokes what
// the code issued (RFC 6749 §4.1.2).
import { lockAuthorizationCode, markAuthorizationCodeUsed } from '../../domain/authorization-codes';
import { issueAccessToken, revokeTokensFromAuthorizationCode } from '../../domain/oauth-tokens';
import { findUserById } from '../../domain/users';
import { InvalidGrant, InvalidRequest } from '../errors';
import { verifyCodeVerifier } from '../pkce';
import type { Grant, GrantContext, GrantResult } from './types';

export const grantType = 'authorization_code';
export const parameters = ['code', 'redirect_uri', 'code_verifier'] as const;

export const clientAuthentication: Grant['clientAuthentication'] = 'required';

export async function handler({ db, params, client, signIdToken }: GrantContext): Promise<GrantResult> {
  const { code, redirect_uri: redirectUri, code_verifier: verifier } = params;
  if (!code || !redirectUri) throw new InvalidRequest();
  const application = client!.application;
  // Return (not throw) refusals from the transaction: a replay's revocation must commit.
  const outcome = await db.transaction().execute(async (trx): Promise<GrantResult | 'invalid_grant'> => {
    const row = await lockAuthorizationCode(trx, code);
    if (!row || row.application_id !== application.id) return 'invalid_grant';
    if (row.used_at) {
      await revokeTokensFromAuthorizationCode(trx, row.id);
      return 'invalid_grant';
    }
    if (row.expires_at.getTime() <= Date.now()) return 'invalid_grant';
    if (row.redirect_uri !== redirectUri) return 'invalid_grant';
    if (row.code_challenge) {
      if (!verifier || !verifyCodeVerifier(verifier, row.code_challenge, row.code_challenge_method!))
        return 'invalid_grant';
    } else if (verifier) {
      // RFC 9700 §2.1.1: a verifier for a code issued without a challenge is a downgrade attempt.
      return 'invalid_grant';
    }
    const user = await findUserById(trx, row.user_id);
    if (user?.state !== 'active') return 'invalid_grant';
    await markAuthorizationCodeUsed(trx, row.id);
    const issued = await issueAccessToken(trx, {
      applicationId: application.id,
      userId: row.user_id,
      scopes: row.scopes,
      withRefreshToken: true,
      authorizationCodeId: row.id,
    });
    if (!row.scopes.includes('openid')) return issued;
    // Codes from before auth_time was recorded: the user's latest sign-in is the best answer.
    const authTime = row.auth_time ?? user.current_sign_in_at ?? row.created_at;
    const nonce = row.nonce ?? undefined;
    const idToken = await signIdToken(trx, { clientId: application.uid, user, authTime, nonce, scopes: issued.scopes });
    return { ...issued, idToken };
  });
  if (outcome === 'invalid_grant') throw new InvalidGrant();
  return outcome;
}

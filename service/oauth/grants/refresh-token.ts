// grant_type=refresh_token (RFC 6749 §6) with rotation: a new access and refresh token, the old
// refresh token dies, the old access token lives until it expires (concurrent clients do not
// race: GitLab #372358). The row is locked, so of concurrent refreshes exactly one wins; a
// replayed refresh token revokes every token descended from it (RFC 9700 §4.14.2).
//
// Retry vs. replay (contract §2 "Refresh retries"): the token presented again by its own client
// within `refreshReuseLeeway` seconds of its rotation (or while in flight during it) is a retry
// after a lost response or a race — it gets a fresh pair and revokes nothing. That pair is
// another child of the presented token (parent_id = its row, same family), so a later replay of
// the token still revokes every pair handed out for it, retries included. With the leeway at 0,
// a request already in flight when the token got rotated lost a race: refused, nothing revoked.
// A presentation later than that is a replay and revokes the descendants. (Authorization codes
// get no such allowance: a client never legitimately exchanges one code twice.)
import { findApplicationById } from '../../domain/applications';
import { findAuthorizationCodeAuthTime } from '../../domain/authorization-codes';
import {
  issueAccessToken,
  lockAccessTokenByRefreshToken,
  markRefreshed,
  revokeDescendants,
} from '../../domain/oauth-tokens';
import { findUserById } from '../../domain/users';
import { InvalidClient, InvalidGrant, InvalidRequest } from '../errors';
import { resolveScopes } from '../scope';
import type { Grant, GrantContext, GrantResult } from './types';

export const grantType = 'refresh_token';
export const parameters = ['refresh_token', 'scope'] as const;

// A public client's token refreshes with no credentials; a confidential one's needs them (below).
export const clientAuthentication: Grant['clientAuthentication'] = 'optional';

export async function handler({
  db,
  params,
  client,
  receivedAt,
  refreshReuseLeeway,
  signIdToken,
}: GrantContext): Promise<GrantResult> {
  const refreshToken = params.refresh_token;
  if (!refreshToken) throw new InvalidRequest();
  const outcome = await db
    .transaction()
    .execute(async (trx): Promise<GrantResult | 'invalid_grant' | 'invalid_client'> => {
      const row = await lockAccessTokenByRefreshToken(trx, refreshToken);
      if (!row || row.application_id === null) return 'invalid_grant';
      let clientId: string;
      if (client) {
        if (client.application.id !== row.application_id) return 'invalid_grant';
        clientId = client.application.uid;
      } else {
        const application = await findApplicationById(trx, row.application_id);
        if (!application || application.confidential) return 'invalid_client';
        clientId = application.uid;
      }
      if (row.revoked_at) return 'invalid_grant';
      // The client check above makes any retry "by the same client".
      const retry =
        row.refreshed_at !== null &&
        refreshReuseLeeway > 0 &&
        receivedAt.getTime() - row.refreshed_at.getTime() <= refreshReuseLeeway * 1000;
      if (row.refreshed_at && !retry) {
        if (row.refreshed_at.getTime() < receivedAt.getTime()) await revokeDescendants(trx, row.id);
        return 'invalid_grant';
      }
      const scopes = resolveScopes(params.scope, row.scopes);
      const user = await findUserById(trx, row.user_id);
      if (user?.state !== 'active') return 'invalid_grant';
      const issued = await issueAccessToken(trx, {
        applicationId: row.application_id,
        userId: row.user_id,
        scopes,
        withRefreshToken: true,
        parentId: row.id,
        familyId: row.family_id ?? row.id,
        authorizationCodeId: row.authorization_code_id,
      });
      // Last, so the stamp is as close to the commit as possible (see "retry vs. replay"). A retry
      // keeps the first rotation's stamp: the leeway runs from the rotation, not the last retry.
      if (!retry) await markRefreshed(trx, row.id);
      if (!scopes.includes('openid')) return issued;
      // OIDC Core §12.2: auth_time stays the original sign-in's; no nonce (no authorization request).
      const authTime =
        (row.authorization_code_id === null
          ? undefined
          : await findAuthorizationCodeAuthTime(trx, row.authorization_code_id)) ??
        user.current_sign_in_at ??
        row.created_at;
      return { ...issued, idToken: await signIdToken(trx, { clientId, user, authTime, scopes: issued.scopes }) };
    });
  if (outcome === 'invalid_grant') throw new InvalidGrant();
  if (outcome === 'invalid_client') throw new InvalidClient();
  return outcome;
}

// grant_type=refresh_token (RFC 6749 §6) with rotation: a new access and refresh token, the old
// refresh token dies, the old access token lives until it expires (concurrent clients do not
// race: GitLab #372358). The row is locked, so of concurrent refreshes exactly one wins; a
// replayed refresh token revokes every token descended from it (RFC 9700 §4.14.2).
//
// Retry vs. replay (contract §2 "Refresh retries"): the token presented again by its own client
// within `refreshReuseLeeway` seconds of its rotation (or while in flight during it) is a retry
// after a lost response or a race — it gets a fresh pair and revokes nothing — while the token it
// was rotated into has not been presented, and at most REFRESH_RETRY_BUDGET (2) times per
// rotation; past either, the presentation is a replay, even inside the leeway. That pair is
// another child of the presented token (parent_id = its row, same family), so a later replay of
// the token still revokes every pair handed out for it, retries included. With the leeway at 0,
// a request already in flight when the token got rotated lost a race: refused, nothing revoked.
// A presentation later than that is a replay and revokes the descendants. (Authorization codes
// get no such allowance: a client never legitimately exchanges one code twice.)
//
// Cost: the rotation is one statement (rotateRefreshToken: lock, decide, insert, stamp), so with
// client authentication a refresh is 2 round trips. A refresh granting openid runs that statement
// inside a transaction instead, which signs the ID token before it commits (a signing failure
// spends nothing); when the request does not say which scopes it wants, the lone statement finds
// out, refusing to rotate (outcome 'openid') so the transaction can.
import { parseScopeString, sortScopes } from '../../domain/scopes';
import {
  revokeDescendants,
  rotateRefreshToken,
  type RotationInput,
  type RotationResult,
} from '../../domain/oauth-tokens';
import { findUserById } from '../../domain/users';
import { InvalidClient, InvalidGrant, InvalidRequest, InvalidScope, InvalidTarget } from '../errors';
import { resolveScopes } from '../scope';
import type { Grant, GrantContext, GrantResult } from './types';

type Refusal = Exclude<RotationResult, { outcome: 'rotated' }>;

export const grantType = 'refresh_token';
export const parameters = ['refresh_token', 'scope'] as const;

// A public client's token refreshes with no credentials; a confidential one's needs them (below).
export const clientAuthentication: Grant['clientAuthentication'] = 'optional';

export async function handler({
  db,
  params,
  client,
  resources,
  receivedAt,
  refreshReuseLeeway,
  signIdToken,
  dpopJkt,
}: GrantContext): Promise<GrantResult> {
  const refreshToken = params.refresh_token;
  if (!refreshToken) throw new InvalidRequest();
  // resolveScopes(params.scope, row.scopes), split in two: the request is parsed here, the subset
  // check against the row happens in the statement (after the grant checks, as before).
  const requested = params.scope === undefined || params.scope.trim() === '' ? undefined : params.scope;
  const parsed = requested === undefined ? undefined : parseScopeString(requested);
  const input: RotationInput = {
    refreshToken,
    // The client check makes any retry "by the same client".
    clientApplicationId: client?.application.id ?? null,
    narrowTo: requested === undefined ? undefined : parsed ? sortScopes(parsed) : [],
    resources,
    receivedAt,
    leeway: refreshReuseLeeway,
    withOpenid: false,
    dpopJkt: dpopJkt ?? null,
  };
  // Asked for scopes without openid: no ID token, so no transaction is needed.
  if (!parsed?.includes('openid')) {
    const result = await rotateRefreshToken(db, input);
    if (result.outcome === 'rotated') return result.issued;
    if (result.outcome !== 'openid') {
      if (result.outcome === 'replay') await revokeDescendants(db, result.tokenId);
      refuse(result);
    }
  }
  // With openid: the same rotation, and the ID token signed before it commits.
  const outcome = await db.transaction().execute(async (trx): Promise<GrantResult | Refusal> => {
    const result = await rotateRefreshToken(trx, { ...input, withOpenid: true });
    // A replay's revocation commits with the refusal; any other refusal changed nothing.
    if (result.outcome === 'replay') await revokeDescendants(trx, result.tokenId);
    if (result.outcome !== 'rotated') return result;
    const { issued } = result;
    if (!issued.scopes.includes('openid')) return issued;
    const user = await findUserById(trx, result.userId);
    // The statement found the user active; one blocked since then rolls the rotation back.
    if (user?.state !== 'active') throw new InvalidGrant();
    const clientId = client?.application.uid ?? result.clientUid;
    // OIDC Core §12.2: no nonce on refresh (there is no authorization request to bind).
    const idToken = await signIdToken(trx, {
      clientId,
      user,
      authTime: result.authTime,
      sid: result.sid,
      amr: result.amr,
      scopes: issued.scopes,
    });
    return { ...issued, idToken };
  });
  if ('outcome' in outcome) refuse(outcome);
  return outcome;

  /** The error a refused rotation answers (nothing changed, bar a replay's revocation). */
  function refuse(result: Refusal): never {
    switch (result.outcome) {
      case 'invalid_client':
        throw new InvalidClient();
      case 'invalid_target':
        throw new InvalidTarget();
      case 'invalid_scope':
        // The one rule answers (wider than the token, or a scope that does not parse).
        resolveScopes(params.scope, result.scopes);
        throw new InvalidScope();
      default:
        throw new InvalidGrant();
    }
  }
}

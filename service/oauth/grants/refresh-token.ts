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
// Cost: the rotation is one statement (rotateRefreshToken: lock, decide, insert, stamp). A
// confidential client's secret is checked by that same statement (withClientSecret), so its
// refresh is 1 round trip; authenticated before (a DPoP proof, `resource`, the leeway at 0), 2. A refresh granting openid runs that statement
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
import { acceptClientCheck } from '../client-auth';
import { InvalidClient, InvalidGrant, InvalidRequest, InvalidScope, InvalidTarget } from '../errors';
import { resolveScopes } from '../scope';
import type { ClientSecretGrantContext, Grant, GrantContext, GrantResult } from './types';

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
  const { input, parsed } = rotationInput(params, {
    // The client check makes any retry "by the same client".
    clientApplicationId: client?.application.id ?? null,
    resources,
    receivedAt,
    leeway: refreshReuseLeeway,
    dpopJkt: dpopJkt ?? null,
  });
  // Asked for scopes without openid: no ID token, so no transaction is needed.
  if (!parsed?.includes('openid')) {
    const result = await rotateRefreshToken(db, input);
    if (result.outcome === 'rotated') return result.issued;
    if (result.outcome !== 'openid') {
      if (result.outcome === 'replay') await revokeDescendants(db, result.tokenId);
      refuse(params, result);
    }
  }
  return rotateSigned(db, params, input, signIdToken);
}

/** With openid: the same rotation, and the ID token signed before it commits. */
async function rotateSigned(
  db: GrantContext['db'],
  params: GrantContext['params'],
  input: RotationInput,
  signIdToken: GrantContext['signIdToken'],
): Promise<GrantResult> {
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
    // OIDC Core §12.2: no nonce on refresh (there is no authorization request to bind). The
    // token's application is the client's (the statement checked it).
    const idToken = await signIdToken(trx, {
      clientId: result.clientUid,
      user,
      authTime: result.authTime,
      sid: result.sid,
      amr: result.amr,
      scopes: issued.scopes,
    });
    return { ...issued, idToken };
  });
  if ('outcome' in outcome) refuse(params, outcome);
  return outcome;
}

/**
 * A confidential client's refresh in one statement: its secret checked by the rotation itself.
 * A grant holding openid then rotates in the transaction that signs the ID token (the client
 * authenticated by the first statement, which changed nothing else). Declined (undefined, nothing
 * changed) when the application binds its tokens to DPoP keys: the general way asks for the proof.
 */
export async function withClientSecret({
  db,
  params,
  credentials,
  address,
  receivedAt,
  refreshReuseLeeway,
  signIdToken,
}: ClientSecretGrantContext): Promise<GrantResult | undefined> {
  // Without a token the client's authentication answers first, as on the general way.
  if (!params.refresh_token) return undefined;
  // Not with the leeway at 0: a concurrent presentation is then told from a replay only by
  // arriving before the winner's stamp, and the general way's first statement (the client alone)
  // is what lets requests already in flight queue before any rotation is stamped
  // (test/attack/races.test.ts). With a leeway, such a presentation is a retry either way.
  if (refreshReuseLeeway === 0) return undefined;
  const { input, parsed } = rotationInput(params, {
    clientApplicationId: null,
    resources: [],
    receivedAt,
    leeway: refreshReuseLeeway,
    dpopJkt: null,
  });
  // Asked for openid by name: the client alone first, then the signing transaction (below).
  if (parsed?.includes('openid')) return undefined;
  const result = await rotateRefreshToken(db, {
    ...input,
    clientSecret: { uid: credentials.clientId, secret: credentials.clientSecret, address },
  });
  if (result.outcome === 'client_refused') acceptClientCheck(credentials, result.check);
  if (result.outcome === 'rotated') return result.issued;
  if (result.outcome === 'dpop_required') return undefined;
  if (result.outcome === 'openid')
    return rotateSigned(db, params, { ...input, clientApplicationId: result.clientApplicationId }, signIdToken);
  if (result.outcome === 'replay') await revokeDescendants(db, result.tokenId);
  refuse(params, result);
}

/**
 * The rotation a request asks for. resolveScopes(params.scope, row.scopes), split in two: the
 * request is parsed here, the subset check against the row happens in the statement (after the
 * grant checks, as before).
 */
function rotationInput(
  params: GrantContext['params'],
  rest: Pick<RotationInput, 'clientApplicationId' | 'resources' | 'receivedAt' | 'leeway' | 'dpopJkt'>,
): { input: RotationInput; parsed: string[] | undefined } {
  const refreshToken = params.refresh_token;
  if (!refreshToken) throw new InvalidRequest();
  const requested = params.scope === undefined || params.scope.trim() === '' ? undefined : params.scope;
  const parsed = requested === undefined ? undefined : (parseScopeString(requested) ?? undefined);
  return {
    input: {
      ...rest,
      refreshToken,
      narrowTo: requested === undefined ? undefined : parsed ? sortScopes(parsed) : [],
      withOpenid: false,
    },
    parsed,
  };
}

/** The error a refused rotation answers (nothing changed, bar a replay's revocation). */
function refuse(params: GrantContext['params'], result: Refusal): never {
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

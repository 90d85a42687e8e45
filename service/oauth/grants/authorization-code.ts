// grant_type=authorization_code (RFC 6749 §4.1.3, RFC 7636 §4.5). One statement does the exchange
// (spendAuthorizationCode): the code's row locked, every check made, the code marked used and the
// token pair inserted, so of concurrent exchanges exactly one finds it unused. A replay revokes
// what the code issued (RFC 6749 §4.1.2). A code holding `openid` is declined by that statement
// alone: its ID token must be signed before the code is spent (GrantContext.signIdToken). The
// declined row says whether every other check passed and carries the user, so the token is
// signed from it and the same statement runs again to spend the code: two statements, no
// transaction, and a signing failure leaves the code redeemable.
import type { DbOrTrx } from '../../db/schema';
import { type SpendAuthorizationCodeResult, spendAuthorizationCode } from '../../domain/authorization-codes';
import { revokeTokensFromAuthorizationCode } from '../../domain/oauth-tokens';
import { narrowedAudience } from '../../domain/resources';
import { InvalidGrant, InvalidRequest, InvalidTarget } from '../errors';
import { verifierCandidates } from '../pkce';
import type { Grant, GrantContext, GrantResult } from './types';

export const grantType = 'authorization_code';
export const parameters = ['code', 'redirect_uri', 'code_verifier'] as const;

export const clientAuthentication: Grant['clientAuthentication'] = 'required';

/**
 * Why a code was not spent, from the row the statement locked: a code of this client already used
 * is a replay, and what it issued is revoked (the caller commits that even though it refuses).
 */
async function refusal(
  db: DbOrTrx,
  { code }: SpendAuthorizationCodeResult,
  applicationId: number,
  resources: string[],
): Promise<'invalid_grant' | 'invalid_target'> {
  if (code && code.application_id === applicationId && code.used_at) {
    await revokeTokensFromAuthorizationCode(db, code.id);
    return 'invalid_grant';
  }
  // RFC 8707 §2.2: a resource the code was not for; the code stays unspent (the statement's check).
  if (code && code.application_id === applicationId && !narrowedAudience(code.resources, resources))
    return 'invalid_target';
  return 'invalid_grant';
}

const refused = (outcome: 'invalid_grant' | 'invalid_target') =>
  outcome === 'invalid_target' ? new InvalidTarget() : new InvalidGrant();

export async function handler({
  db,
  params,
  client,
  resources,
  signIdToken,
  dpopJkt,
}: GrantContext): Promise<GrantResult> {
  const { code, redirect_uri: redirectUri, code_verifier: verifier } = params;
  if (!code || !redirectUri) throw new InvalidRequest();
  const application = client!.application;
  const candidates = verifierCandidates(verifier);
  const spend = (on: DbOrTrx, allowOpenid: boolean) =>
    spendAuthorizationCode(on, {
      code,
      applicationId: application.id,
      redirectUri,
      verifier: candidates,
      allowOpenid,
      resources,
      now: new Date(),
      dpopJkt: dpopJkt ?? null,
    });

  // The common case, without openid: one statement, no transaction.
  const first = await spend(db, false);
  if (first.issued) return first.issued;
  const row = first.code;
  // Declined only for holding openid: every other check passed, and the row carries the user.
  if (!row?.spendable || !row.scopes.includes('openid') || !row.user)
    throw refused(await refusal(db, first, application.id, resources));

  // openid: the ID token is signed from that row first (a signing failure spends nothing), then the
  // same statement spends the code, still checking everything (a concurrent exchange, a user
  // blocked meanwhile: refused as above, and the token thrown away).
  const { user } = row;
  // Codes from before auth_time was recorded: the user's latest sign-in is the best answer.
  const idToken = await signIdToken(db, {
    clientId: application.uid,
    user,
    authTime: row.auth_time ?? user.current_sign_in_at ?? row.created_at,
    nonce: row.nonce ?? undefined,
    sid: row.sid ?? undefined,
    amr: row.amr ?? undefined,
    scopes: row.scopes,
  });
  const second = await spend(db, true);
  if (!second.issued) throw refused(await refusal(db, second, application.id, resources));
  return { ...second.issued, idToken };
}

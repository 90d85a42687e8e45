// grant_type=authorization_code (RFC 6749 §4.1.3, RFC 7636 §4.5). One statement does the exchange
// (spendAuthorizationCode): the code's row locked, every check made, the code marked used and the
// token pair inserted, so of concurrent exchanges exactly one finds it unused. A replay revokes
// what the code issued (RFC 6749 §4.1.2). A code holding `openid` is declined by that statement
// alone: its ID token must be signed before the code is spent (GrantContext.signIdToken), so the
// same statement runs in a transaction that commits only once the token is signed.
import type { DbOrTrx } from '../../db/schema';
import { type SpendAuthorizationCodeResult, spendAuthorizationCode } from '../../domain/authorization-codes';
import { revokeTokensFromAuthorizationCode } from '../../domain/oauth-tokens';
import { findUserById } from '../../domain/users';
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
  const declinedForOpenid =
    row && row.application_id === application.id && !row.used_at && row.scopes.includes('openid');
  if (!declinedForOpenid) throw refused(await refusal(db, first, application.id, resources));

  // openid: BEGIN, the same statement, the ID token signed, COMMIT. Refusals are returned, not
  // thrown, so that a replay's revocation commits.
  const outcome = await db
    .transaction()
    .execute(async (trx): Promise<GrantResult | 'invalid_grant' | 'invalid_target'> => {
      const spent = await spend(trx, true);
      if (!spent.issued || !spent.code) return refusal(trx, spent, application.id, resources);
      const { code: row, issued } = spent;
      // The statement checked that the user is active; the claims need the whole row. (Thrown, not
      // returned: nothing of this exchange may commit.)
      const user = await findUserById(trx, row.user_id);
      if (!user) throw new InvalidGrant();
      // Codes from before auth_time was recorded: the user's latest sign-in is the best answer.
      const authTime = row.auth_time ?? user.current_sign_in_at ?? row.created_at;
      const nonce = row.nonce ?? undefined;
      const sid = row.sid ?? undefined;
      const idToken = await signIdToken(trx, {
        clientId: application.uid,
        user,
        authTime,
        nonce,
        sid,
        amr: row.amr ?? undefined,
        scopes: issued.scopes,
      });
      return { ...issued, idToken };
    });
  if (typeof outcome === 'string') throw refused(outcome);
  return outcome;
}

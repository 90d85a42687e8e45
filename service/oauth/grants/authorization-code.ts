// grant_type=authorization_code (RFC 6749 §4.1.3, RFC 7636 §4.5). One statement does the exchange
// (spendAuthorizationCode): the code's row locked, every check made, the code marked used and the
// token pair inserted, so of concurrent exchanges exactly one finds it unused. A replay revokes
// what the code issued (RFC 6749 §4.1.2). A code holding `openid` is declined by that statement
// alone: its ID token must be signed before the code is spent (GrantContext.signIdToken). The
// declined row says whether every other check passed and carries the user, so the token is
// signed from it and the same statement runs again to spend the code: two statements, no
// transaction, and a signing failure leaves the code redeemable. A confidential client's secret is
// checked by the first of those statements (withClientSecret): 1 round trip, or 2 with openid.
import type { DbOrTrx } from '../../db/schema';
import type { ApplicationRecord, SecretCheck } from '../../domain/applications';
import { type SpendAuthorizationCodeResult, spendAuthorizationCode } from '../../domain/authorization-codes';
import { revokeTokensFromAuthorizationCode } from '../../domain/oauth-tokens';
import { narrowedAudience } from '../../domain/resources';
import { acceptClientCheck } from '../client-auth';
import { InvalidGrant, InvalidRequest, InvalidTarget } from '../errors';
import { verifierCandidates } from '../pkce';
import type { ClientSecretGrantContext, Grant, GrantContext, GrantResult } from './types';

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
  const spend: Spend = (on, allowOpenid) =>
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
  return exchange(db, await spend(db, false), { application, spend, signIdToken, resources });
}

/**
 * The client's secret checked by the spending statement itself: one statement for a code without
 * openid, two with it. Declined (undefined, nothing spent) for an application that requires DPoP
 * proofs (the statement refuses to spend for it), and without a code or redirect URI (the general
 * way authenticates the client first).
 */
export async function withClientSecret({
  db,
  params,
  credentials,
  address,
  signIdToken,
}: ClientSecretGrantContext): Promise<GrantResult | undefined> {
  const { code, redirect_uri: redirectUri, code_verifier: verifier } = params;
  if (!code || !redirectUri) return undefined;
  const candidates = verifierCandidates(verifier);
  const input = { code, redirectUri, verifier: candidates, resources: [], dpopJkt: null };
  const first = await spendAuthorizationCode(db, {
    ...input,
    applicationId: null,
    clientSecret: { uid: credentials.clientId, secret: credentials.clientSecret, address },
    allowOpenid: false,
    now: new Date(),
  });
  const application = acceptClientCheck(credentials, first.clientCheck as SecretCheck);
  if (application.dpop_bound_access_tokens) return undefined;
  const spend: Spend = (on, allowOpenid) =>
    spendAuthorizationCode(on, { ...input, applicationId: application.id, allowOpenid, now: new Date() });
  return exchange(db, first, { application, spend, signIdToken, resources: [] });
}

type Spend = (on: DbOrTrx, allowOpenid: boolean) => Promise<SpendAuthorizationCodeResult>;

/** The exchange after the first spending statement: issued, refused, or openid's second statement. */
async function exchange(
  db: DbOrTrx,
  first: SpendAuthorizationCodeResult,
  {
    application,
    spend,
    signIdToken,
    resources,
  }: { application: ApplicationRecord; spend: Spend; signIdToken: GrantContext['signIdToken']; resources: string[] },
): Promise<GrantResult> {
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

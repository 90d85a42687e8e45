// grant_type=authorization_code (RFC 6749 §4.1.3, RFC 7636 §4.5). One statement does the exchange
// (spendAuthorizationCode): the code's row locked, every check made, the code marked used and the
// token pair inserted, so of concurrent exchanges exactly one finds it unused. A replay revokes
// what the code issued (RFC 6749 §4.1.2). A code holding `openid` is spent by that statement only
// once the signing key is loaded (GrantContext.idTokenKeyReady); the row it returns carries the
// user, and the ID token is signed from it. Without a usable key the statement declines such a
// code (changing nothing), the signing fails and the code stays redeemable. Should anything fail
// after the spend (the profile claims' read, the signature), the tokens the statement issued are
// revoked before the error answers: the client holds nothing, and a retry is a replay. A
// confidential client's secret is checked by the same statement (withClientSecret): 1 round trip,
// with or without openid.
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
  idTokenKeyReady,
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
  // One statement, no transaction; a code holding openid is spent only with the key loaded.
  const first = await spend(db, await idTokenKeyReady());
  return exchange(db, first, { application, spend, signIdToken, resources });
}

/**
 * The client's secret checked by the spending statement itself: one statement. Declined (undefined, nothing spent) for an application that requires DPoP
 * proofs (the statement refuses to spend for it), and without a code or redirect URI (the general
 * way authenticates the client first).
 */
export async function withClientSecret({
  db,
  params,
  credentials,
  address,
  signIdToken,
  idTokenKeyReady,
}: ClientSecretGrantContext): Promise<GrantResult | undefined> {
  const { code, redirect_uri: redirectUri, code_verifier: verifier } = params;
  if (!code || !redirectUri) return undefined;
  const candidates = verifierCandidates(verifier);
  const input = { code, redirectUri, verifier: candidates, resources: [], dpopJkt: null };
  const first = await spendAuthorizationCode(db, {
    ...input,
    applicationId: null,
    clientSecret: { uid: credentials.clientId, secret: credentials.clientSecret, address },
    allowOpenid: await idTokenKeyReady(),
    now: new Date(),
  });
  const application = acceptClientCheck(credentials, first.clientCheck as SecretCheck);
  if (application.dpop_bound_access_tokens) return undefined;
  const spend: Spend = (on, allowOpenid) =>
    spendAuthorizationCode(on, { ...input, applicationId: application.id, allowOpenid, now: new Date() });
  return exchange(db, first, { application, spend, signIdToken, resources: [] });
}

type Spend = (on: DbOrTrx, allowOpenid: boolean) => Promise<SpendAuthorizationCodeResult>;

/**
 * The exchange after the spending statement: issued (with its ID token when the code holds
 * openid), refused, or, a code holding openid declined for want of a signing key, the signing
 * tried first (it fails without spending) and the same statement run again.
 */
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
  const row = first.code;
  if (first.issued) {
    if (!row?.user || !first.issued.scopes.includes('openid')) return first.issued;
    // Spent with openid: the ID token from the row the statement returned. A failure from here
    // leaves nothing usable: what the statement issued is revoked, then the error answers.
    try {
      return { ...first.issued, idToken: await signIdToken(db, idTokenRequest(application, row, row.user)) };
    } catch (err) {
      await revokeTokensFromAuthorizationCode(db, row.id);
      throw err;
    }
  }
  // Declined only for holding openid: every other check passed, and the row carries the user.
  if (!row?.spendable || !row.scopes.includes('openid') || !row.user)
    throw refused(await refusal(db, first, application.id, resources));

  // openid without a loaded key: signing first (a failure spends nothing), then the same statement
  // spends the code, still checking everything (a concurrent exchange, a user blocked meanwhile:
  // refused as above, and the token thrown away).
  const idToken = await signIdToken(db, idTokenRequest(application, row, row.user));
  const second = await spend(db, true);
  if (!second.issued) throw refused(await refusal(db, second, application.id, resources));
  return { ...second.issued, idToken };
}

/** The ID token of a code, from its row. */
function idTokenRequest(
  application: ApplicationRecord,
  row: NonNullable<SpendAuthorizationCodeResult['code']>,
  user: NonNullable<NonNullable<SpendAuthorizationCodeResult['code']>['user']>,
) {
  return {
    clientId: application.uid,
    user,
    // Codes from before auth_time was recorded: the user's latest sign-in is the best answer.
    authTime: row.auth_time ?? user.current_sign_in_at ?? row.created_at,
    nonce: row.nonce ?? undefined,
    sid: row.sid ?? undefined,
    amr: row.amr ?? undefined,
    scopes: row.scopes,
  };
}

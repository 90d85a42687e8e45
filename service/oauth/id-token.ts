// The ID token (OIDC Core §2, §3.1.3.6, §12.2): issued with the token response whenever the grant
// holds `openid`, on the code exchange and on refresh. RS256, signed with the current key (its kid
// in the header); iss, sub, aud, exp, iat, auth_time, the nonce of the authorization request (not
// on refresh, where there is no request to bind), `sid` (the browser session signed in with, the
// same on refresh), `amr` and `acr` (how the person signed in, when recorded), and the scope's claims.
import type { DbOrTrx, User } from '../db/schema';
import { acrOf } from '../domain/authentication-methods';
import { userClaims } from '../domain/oidc-claims';
import { createLocalJWKSet, type JWK, jwtVerify } from 'jose';
import { SIGNING_ALG, signJwt, type SigningKeySource } from '../domain/signing-keys';

export interface IdTokenInput {
  issuer: string;
  clientId: string;
  user: Pick<User, 'id' | 'username' | 'name' | 'email' | 'avatar_url' | 'confirmed_at'>;
  scopes: readonly string[];
  authTime: Date;
  nonce?: string;
  /** The Lanyard browser session (OpenID Connect Front-/Back-Channel Logout's `sid`). */
  sid?: string;
  /** RFC 8176 authentication methods of the sign-in; `acr` is derived from them. */
  amr?: string[];
  lifetimeSeconds: number;
}

export async function issueIdToken(db: DbOrTrx, keys: SigningKeySource, input: IdTokenInput): Promise<string> {
  const now = Math.floor(Date.now() / 1000);
  const claims = await userClaims(db, input.user, input.scopes, input.issuer, 'id_token');
  return signJwt(await keys.load(), {
    iss: input.issuer,
    sub: claims.sub,
    aud: input.clientId,
    exp: now + input.lifetimeSeconds,
    iat: now,
    auth_time: Math.floor(input.authTime.getTime() / 1000),
    ...(input.nonce === undefined ? {} : { nonce: input.nonce }),
    ...(input.sid === undefined ? {} : { sid: input.sid }),
    ...(input.amr === undefined ? {} : { amr: input.amr, acr: acrOf(input.amr) }),
    ...claims,
  });
}

/** The claims of an ID token hint that end_session relies on. */
export interface IdTokenHint {
  sub: string;
  aud: string[];
  sid?: string;
}

/**
 * RP-Initiated Logout 1.0 §2 `id_token_hint`: an ID token this issuer signed (RS256, a key of our
 * JWKS, `iss` ours). An expired one is accepted, as §4 allows (the relying party's copy is usually
 * old), but not one that expired longer ago than a browser session lives: no session it was issued
 * in can still be open. Anything else (another issuer's, tampered, malformed) → undefined.
 */
export async function verifyIdTokenHint(
  keys: SigningKeySource,
  issuer: string,
  hint: string,
  expiredLeewaySeconds: number,
): Promise<IdTokenHint | undefined> {
  try {
    const { jwks } = await keys.load();
    const { payload } = await jwtVerify(hint, createLocalJWKSet({ keys: jwks as JWK[] }), {
      issuer,
      algorithms: [SIGNING_ALG],
      clockTolerance: expiredLeewaySeconds,
      requiredClaims: ['sub', 'aud', 'exp', 'iat'],
    });
    const aud = typeof payload.aud === 'string' ? [payload.aud] : (payload.aud ?? []);
    return {
      sub: payload.sub as string,
      aud,
      ...(typeof payload.sid === 'string' ? { sid: payload.sid } : {}),
    };
  } catch {
    return undefined;
  }
}

// The ID token (OIDC Core §2, §3.1.3.6, §12.2): issued with the token response whenever the grant
// holds `openid`, on the code exchange and on refresh. RS256, signed with the current key (its kid
// in the header); iss, sub, aud, exp, iat, auth_time, the nonce of the authorization request (not
// on refresh, where there is no request to bind), and the scope's claims.
import type { DbOrTrx, User } from '../db/schema';
import { userClaims } from '../domain/oidc-claims';
import { signJwt, type SigningKeySource } from '../domain/signing-keys';

export interface IdTokenInput {
  issuer: string;
  clientId: string;
  user: Pick<User, 'id' | 'username' | 'name' | 'email' | 'avatar_url' | 'confirmed_at'>;
  scopes: readonly string[];
  authTime: Date;
  nonce?: string;
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
    ...claims,
  });
}

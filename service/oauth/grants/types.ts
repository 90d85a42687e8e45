// What a grant module exports, and what the token endpoint hands it.
import type { Db, DbOrTrx, User } from '../../db/schema';
import type { IssuedToken } from '../../domain/oauth-tokens';
import type { AuthenticatedClient, ClientCredentials } from '../client-auth';

export interface GrantContext {
  db: Db;
  /** The grant's declared parameters, each a single string (repeats are refused before). */
  params: Record<string, string | undefined>;
  /**
   * RFC 8707: the `resource` values of the request, each already allowed to the client (none when
   * the request named none). The grant checks them against what was granted.
   */
  resources: string[];
  /** The authenticated client, when the request carried credentials. */
  client: AuthenticatedClient | undefined;
  /** The client address (request.ip), for the credential rate limit. */
  address: string;
  /** When the request arrived (the service's clock): tells a lost race from a replay. */
  receivedAt: Date;
  /** Seconds after a refresh token's rotation during which the same client may retry it. */
  refreshReuseLeeway: number;
  /** RFC 9449: the thumbprint of the key of the request's accepted DPoP proof; the token is bound to it. */
  dpopJkt: string | undefined;
  /**
   * Signs the ID token of a grant holding `openid`. The device and refresh grants call it before
   * they spend what they exchange (before their transaction commits): if signing fails (no usable
   * key, a claims read), the device code or refresh token is not spent and the client can simply
   * retry. The code exchange's one statement spends the code once the key is loaded
   * (idTokenKeyReady) and calls it after; a failure then revokes what the statement issued.
   */
  signIdToken(db: DbOrTrx, input: IdTokenRequest): Promise<string>;
  /**
   * Whether an ID token can be signed now: the signing key loaded (cached), false when none can
   * be. The code exchange asks before its one statement, which spends a code holding `openid` only
   * then; signIdToken loads the same key again.
   */
  idTokenKeyReady(): Promise<boolean>;
}

export interface IdTokenRequest {
  clientId: string;
  /** The claims' columns of the user (IdTokenInput's). */
  user: Pick<User, 'id' | 'username' | 'name' | 'email' | 'avatar_url' | 'confirmed_at'>;
  authTime: Date;
  nonce?: string;
  /** The browser session the person signed in with (back-channel/RP-initiated logout's sid). */
  sid?: string;
  /** RFC 8176: how the person signed in, when it was recorded (the ID token's amr and acr). */
  amr?: string[];
  scopes: string[];
}

/** What a grant issued; `idToken` (signed) when the grant holds `openid`. */
export interface GrantResult extends IssuedToken {
  idToken?: string;
}

export interface Grant {
  /** RFC 6749 `grant_type` value. */
  grantType: string;
  /** The parameters the grant reads (besides grant_type and client credentials). */
  parameters: readonly string[];
  /** `required`: the request must identify a client (a public one by client_id alone). */
  clientAuthentication: 'required' | 'optional';
  handler(ctx: GrantContext): Promise<GrantResult>;
  /**
   * Optional: the grant checks the client's secret inside its own statement, one round trip for
   * client authentication and the grant. The token endpoint calls it instead of authenticating
   * the client and calling `handler` when the request carries a client secret and needs nothing
   * else of the client first (no DPoP proof, no `resource`). It throws what client
   * authentication would for a refused secret (acceptClientCheck), and answers undefined when it
   * declined, having changed nothing: the endpoint then takes the general way.
   */
  withClientSecret?(ctx: ClientSecretGrantContext): Promise<GrantResult | undefined>;
}

/** What `withClientSecret` gets: the credentials to check instead of a client checked before. */
export interface ClientSecretGrantContext extends Omit<GrantContext, 'client' | 'resources' | 'dpopJkt'> {
  credentials: ClientCredentials & { clientSecret: string };
}

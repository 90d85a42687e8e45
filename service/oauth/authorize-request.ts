// Validation of an authorization request (RFC 6749 §4.1.1, §4.1.2.1; RFC 7636 §4.3), shared by
// the consent page (GET) and the decision (POST). The client and redirect URI come first: while
// either is wrong nothing may be sent to the redirect URI (an error page instead); after that,
// errors go back to the client with `error`, `error_description` and the original `state`.
import type { Db } from '../db/schema';
import { findApplicationByUid, type ApplicationRecord } from '../domain/applications';
import { matchRedirectUri } from '../domain/redirect-uris';
import { userGrantableScopes } from '../domain/scopes';
import { nonScalarParam, stringParam } from '../shared/params';
import { InvalidRequest, OAuthError, UnsupportedResponseType } from './errors';
import { parseCodeChallenge, type CodeChallengeMethod } from './pkce';
import { requestedResources } from './resource';
import { resolveScopes } from './scope';

export const AUTHORIZE_PARAMETERS = [
  'client_id',
  'redirect_uri',
  'response_type',
  'state',
  'scope',
  'code_challenge',
  'code_challenge_method',
  'nonce',
  'prompt',
  'max_age',
  'dpop_jkt',
] as const;

/** OIDC Core §3.1.2.1 `prompt` values Lanyard honours (select_account: one account per session). */
export type Prompt = 'none' | 'login' | 'consent';
const PROMPTS: readonly string[] = ['none', 'login', 'consent'];
/** A nonce is echoed in a signed token: bound its size. */
const MAX_NONCE_LENGTH = 1024;

export interface ValidAuthorizeRequest {
  kind: 'valid';
  application: ApplicationRecord;
  redirectUri: string;
  state: string | undefined;
  scopes: string[];
  codeChallenge?: string;
  codeChallengeMethod?: CodeChallengeMethod;
  /** OpenID Connect: echoed in the ID token. */
  nonce?: string;
  prompt: Set<Prompt>;
  /** OpenID Connect: the longest acceptable time since sign-in, in seconds. */
  maxAge?: number;
  /** RFC 9449 §10: the code is exchanged only with a DPoP proof of this key (its SHA-256 thumbprint). */
  dpopJkt?: string;
  /** RFC 8707: the resources the token is for (stored on the code). */
  resources: string[];
}

export type AuthorizeRequest =
  | ValidAuthorizeRequest
  /** Unknown client or bad redirect URI: an HTML error page, never a redirect. */
  | { kind: 'error_page'; error: 'invalid_client' | 'invalid_redirect_uri'; description: string }
  /** Anything else: redirect back to the client with the error. */
  | { kind: 'error_redirect'; redirectUri: string; state: string | undefined; error: OAuthError };

export const ERROR_PAGE_DESCRIPTIONS = {
  invalid_client:
    'Client authentication failed due to unknown client, no client authentication included, or unsupported authentication method.',
  invalid_redirect_uri: 'The redirect uri included is not valid.',
} as const;

/** The request's client_id, unless missing or sent twice (RFC 6749 §3.1: malformed, an error page). */
export const authorizeClientId = (params: Record<string, unknown>): string | undefined =>
  nonScalarParam(params, ['client_id']) ? undefined : stringParam(params, 'client_id') || undefined;

export async function validateAuthorizeRequest(
  db: Db,
  params: Record<string, unknown>,
  publicUrl: string,
): Promise<AuthorizeRequest> {
  const clientId = authorizeClientId(params);
  return checkAuthorizeRequest(params, clientId ? await findApplicationByUid(db, clientId) : undefined, publicUrl);
}

/**
 * validateAuthorizeRequest over the application already looked up by authorizeClientId(params)
 * (GET /oauth/authorize reads it with the session, in one round trip).
 */
export function checkAuthorizeRequest(
  params: Record<string, unknown>,
  application: ApplicationRecord | undefined,
  publicUrl: string,
): AuthorizeRequest {
  // RFC 6749 §3.1: a parameter sent twice is malformed; for the client and redirect URI that is an error page.
  if (!application)
    return { kind: 'error_page', error: 'invalid_client', description: ERROR_PAGE_DESCRIPTIONS.invalid_client };
  const redirectUri = nonScalarParam(params, ['redirect_uri']) ? undefined : stringParam(params, 'redirect_uri');
  if (!redirectUri || !matchRedirectUri(application.redirect_uris, redirectUri)) {
    return {
      kind: 'error_page',
      error: 'invalid_redirect_uri',
      description: ERROR_PAGE_DESCRIPTIONS.invalid_redirect_uri,
    };
  }
  const state = stringParam(params, 'state');
  try {
    if (nonScalarParam(params, AUTHORIZE_PARAMETERS)) throw new InvalidRequest();
    const responseType = stringParam(params, 'response_type');
    if (!responseType) throw new InvalidRequest();
    // `token` (implicit) and everything else: only the code flow exists here (RFC 9700 §2.1.2).
    if (responseType !== 'code') throw new UnsupportedResponseType();
    const scopes = resolveScopes(stringParam(params, 'scope'), userGrantableScopes(application.scopes));
    const pkce = parseCodeChallenge(
      stringParam(params, 'code_challenge'),
      stringParam(params, 'code_challenge_method'),
    );
    // Public clients cannot keep a secret: PKCE is what binds their code to them (RFC 9700 §2.1.1).
    if (!application.confidential && !pkce) throw new InvalidRequest();
    const nonce = stringParam(params, 'nonce');
    if (nonce !== undefined && (nonce === '' || nonce.length > MAX_NONCE_LENGTH)) throw new InvalidRequest();
    const prompt = new Set((stringParam(params, 'prompt') ?? '').split(' ').filter(Boolean));
    // §3.1.2.1: none with any other value is an error; so is a value we do not support.
    if ([...prompt].some((p) => !PROMPTS.includes(p)) || (prompt.has('none') && prompt.size > 1))
      throw new InvalidRequest();
    const maxAgeText = stringParam(params, 'max_age');
    if (maxAgeText !== undefined && !/^\d{1,9}$/.test(maxAgeText)) throw new InvalidRequest();
    // A JWK SHA-256 thumbprint (RFC 7638) is 43 base64url characters.
    const dpopJkt = stringParam(params, 'dpop_jkt');
    if (dpopJkt !== undefined && !/^[A-Za-z0-9_-]{43}$/.test(dpopJkt)) throw new InvalidRequest();
    // RFC 8707 §2: invalid_target goes back to the client like any error after the redirect URI.
    const resources = requestedResources(params, application.allowed_resources, publicUrl);
    return {
      kind: 'valid',
      application,
      redirectUri,
      state,
      scopes,
      ...pkce,
      nonce,
      prompt: prompt as Set<Prompt>,
      maxAge: maxAgeText === undefined ? undefined : Number(maxAgeText),
      dpopJkt,
      resources,
    };
  } catch (err) {
    if (err instanceof OAuthError) return { kind: 'error_redirect', redirectUri, state, error: err };
    throw err;
  }
}

/**
 * RFC 6749 §4.1.2: the redirect URI with the response parameters added to its query, and (RFC 9207
 * §2) the issuer as `iss` on every authorization response, success or error, so a client talking to
 * several authorization servers can tell which one answered (mix-up attacks).
 */
export function redirectWith(redirectUri: string, issuer: string, values: Record<string, string | undefined>): string {
  const url = new URL(redirectUri);
  for (const [k, v] of Object.entries(values)) if (v !== undefined) url.searchParams.append(k, v);
  url.searchParams.append('iss', issuer);
  return url.toString();
}

export function errorRedirect(
  redirectUri: string,
  issuer: string,
  error: OAuthError,
  state: string | undefined,
): string {
  return redirectWith(redirectUri, issuer, { error: error.error, error_description: error.description, state });
}

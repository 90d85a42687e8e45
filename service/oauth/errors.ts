// OAuth 2.0 errors (RFC 6749 §5.2, §4.1.2.1; RFC 7009; RFC 6750). One class per error code,
// with Doorkeeper's descriptions byte-for-byte, serialised by the root error handler.

export const OAUTH_ERROR_DESCRIPTIONS = {
  invalid_request:
    'The request is missing a required parameter, includes an unsupported parameter value, or is otherwise malformed.',
  invalid_client:
    'Client authentication failed due to unknown client, no client authentication included, or unsupported authentication method.',
  invalid_grant:
    'The provided authorization grant is invalid, expired, revoked, does not match the redirection URI used in the authorization request, or was issued to another client.',
  unauthorized_client: 'The client is not authorized to perform this request using this method.',
  unsupported_grant_type: 'The authorization grant type is not supported by the authorization server.',
  invalid_scope: 'The requested scope is invalid, unknown, or malformed.',
  access_denied: 'The resource owner or authorization server denied the request.',
  unsupported_response_type: 'The authorization server does not support this response type.',
} as const;

/** OIDC Core §3.1.2.6, with doorkeeper-openid_connect's descriptions. */
export const OIDC_ERROR_DESCRIPTIONS = {
  login_required: 'The authorization server requires end-user authentication.',
  consent_required: 'The authorization server requires end-user consent.',
} as const;

/**
 * The device grant's polling errors (RFC 8628 §3.5). Neither Doorkeeper's locale nor the
 * doorkeeper-device_authorization_grant gem's has an entry for them (GitLab falls back to
 * server_error's text, which tells a client nothing), so they carry RFC 8628 §3.5's own definitions;
 * access_denied keeps Doorkeeper's text, as on the authorization endpoint.
 */
export const DEVICE_GRANT_ERROR_DESCRIPTIONS = {
  authorization_pending:
    "The authorization request is still pending as the end user hasn't yet completed the user-interaction steps.",
  slow_down:
    'The authorization request is still pending and polling should continue, but the interval must be increased by 5 seconds for this and all subsequent requests.',
  expired_token: 'The device_code has expired, and the device authorization session has concluded.',
} as const;

export type OAuthErrorCode =
  | keyof typeof OAUTH_ERROR_DESCRIPTIONS
  | keyof typeof OIDC_ERROR_DESCRIPTIONS
  | 'invalid_token'
  | 'invalid_target'
  | 'invalid_redirect_uri'
  | 'invalid_client_metadata'
  | 'insufficient_scope'
  | 'authorization_pending'
  | 'slow_down'
  | 'expired_token'
  | 'temporarily_unavailable'
  | 'invalid_dpop_proof'
  | 'use_dpop_nonce';

export class OAuthError extends Error {
  readonly headers: Record<string, string> = {};
  constructor(
    readonly error: OAuthErrorCode,
    readonly statusCode = 400,
    readonly description: string = (
      { ...OAUTH_ERROR_DESCRIPTIONS, ...OIDC_ERROR_DESCRIPTIONS } as Record<string, string>
    )[error] ?? error,
    /** Extra body members, e.g. {"state":"unauthorized"} on token info, {"scope":"api"} on 403. */
    readonly extra: Record<string, unknown> = {},
  ) {
    super(description);
    this.name = 'OAuthError';
  }
  toJSON() {
    return { error: this.error, error_description: this.description, ...this.extra };
  }
}

export class InvalidRequest extends OAuthError {
  constructor(description?: string) {
    super('invalid_request', 400, description);
  }
}
export class InvalidClient extends OAuthError {
  /** `basicRealm`: the client used HTTP Basic, so answer with WWW-Authenticate (RFC 6749 §5.2). */
  constructor(basicRealm?: string) {
    super('invalid_client', 401);
    if (basicRealm) this.headers['WWW-Authenticate'] = `Basic realm="${basicRealm}"`;
  }
}
export class InvalidGrant extends OAuthError {
  constructor() {
    super('invalid_grant', 400);
  }
}
export class UnauthorizedClient extends OAuthError {
  constructor(description?: string, statusCode = 400) {
    super('unauthorized_client', statusCode, description);
  }
}
export class UnsupportedGrantType extends OAuthError {
  constructor() {
    super('unsupported_grant_type', 400);
  }
}
export class InvalidScope extends OAuthError {
  constructor() {
    super('invalid_scope', 400);
  }
}
export class AccessDenied extends OAuthError {
  constructor() {
    super('access_denied', 400);
  }
}
export class UnsupportedResponseType extends OAuthError {
  constructor() {
    super('unsupported_response_type', 400);
  }
}

/** RFC 8628 §3.5: the person has not decided yet; poll again after the interval. */
export class AuthorizationPending extends OAuthError {
  constructor() {
    super('authorization_pending', 400, DEVICE_GRANT_ERROR_DESCRIPTIONS.authorization_pending);
  }
}
/** RFC 8628 §3.5: polled sooner than the interval; the interval has grown by 5 seconds. */
export class SlowDown extends OAuthError {
  constructor() {
    super('slow_down', 400, DEVICE_GRANT_ERROR_DESCRIPTIONS.slow_down);
  }
}
/** RFC 8628 §3.5: the device code expired before it was approved; the flow is over. */
export class ExpiredToken extends OAuthError {
  constructor() {
    super('expired_token', 400, DEVICE_GRANT_ERROR_DESCRIPTIONS.expired_token);
  }
}

/** RFC 8707 §2: a `resource` that is relative, has a fragment, or that this client may not ask for. */
export class InvalidTarget extends OAuthError {
  constructor() {
    super('invalid_target', 400, 'The requested resource is invalid, missing, unknown, or malformed.');
  }
}

/** RFC 7591 §3.2.2: a registration request's redirect URIs are unacceptable. */
export class InvalidRedirectUri extends OAuthError {
  constructor(description: string) {
    super('invalid_redirect_uri', 400, description);
  }
}

/** RFC 7591 §3.2.2: a registration request's other client metadata is unacceptable. */
export class InvalidClientMetadata extends OAuthError {
  constructor(description: string) {
    super('invalid_client_metadata', 400, description);
  }
}

/** RFC 6750 §3.1 on /oauth/token/info: Doorkeeper's body, with its `"state":"unauthorized"`. */
export class InvalidToken extends OAuthError {
  constructor() {
    super('invalid_token', 401, 'The access token is invalid', { state: 'unauthorized' });
  }
}

/** RFC 7009 §2.1: a confidential application's token, without that application's credentials. */
export class RevocationForbidden extends UnauthorizedClient {
  constructor() {
    super('You are not authorized to revoke this token', 403);
  }
}

/** OIDC Core §3.1.2.6: prompt=none (or an expired max_age with prompt=none) and nobody signed in. */
export class LoginRequired extends OAuthError {
  constructor() {
    super('login_required');
  }
}

/** OIDC Core §3.1.2.6: prompt=none and the consent page would be needed. */
export class ConsentRequired extends OAuthError {
  constructor() {
    super('consent_required');
  }
}

/**
 * 429 in the OAuth error shape (GitLab's rack-attack answers a plain-text "Retry later"; OAuth
 * clients parse JSON). `slow_down` is the RFC's own rate-limit code (RFC 8628 §3.5: "the client
 * should slow down"); Retry-After and GitLab's RateLimit-* headers say for how long.
 */
export class TooManyRequests extends OAuthError {
  constructor(
    throttle: { retryAfter: number; limit: number; observed: number; resetAt: Date },
    description = 'Too many failed attempts. Retry later.',
    rateLimitName = 'throttle_failed_credentials',
  ) {
    super('slow_down', 429, description);
    const reset = Math.ceil(throttle.resetAt.getTime() / 1000);
    Object.assign(this.headers, {
      'Retry-After': String(throttle.retryAfter),
      'RateLimit-Name': rateLimitName,
      'RateLimit-Limit': String(throttle.limit),
      'RateLimit-Observed': String(throttle.observed),
      'RateLimit-Remaining': String(Math.max(0, throttle.limit - throttle.observed)),
      'RateLimit-Reset': String(reset),
      'RateLimit-ResetTime': new Date(reset * 1000).toUTCString(),
    });
  }
}

/** RFC 6749 §4.1.2.1's temporarily_unavailable, as a 503 (the database is down), Doorkeeper's wording. */
export class TemporarilyUnavailable extends OAuthError {
  constructor() {
    super(
      'temporarily_unavailable',
      503,
      'The authorization server is currently unable to handle the request due to a temporary overloading or maintenance of the server.',
    );
  }
}

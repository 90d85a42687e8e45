// Scopes: api (all of /api/v4), read_api (GET/HEAD on /api/v4), read_user (GET/HEAD /api/v4/user),
// the OpenID Connect scopes openid, profile, email (identity only: no /api/v4 access), and
// Lanyard's notify (the notification recipients API), which only an application's own token holds.
import { invalidField } from './errors';

/** Scopes that open /api/v4 (personal access tokens hold only these). */
export const API_SCOPES = ['api', 'read_api', 'read_user'] as const;
/** OpenID Connect Core §5.4: identity claims, never /api/v4. */
export const OIDC_SCOPES = ['openid', 'profile', 'email'] as const;
/**
 * Scopes only an application's own token (client_credentials) may hold: an application registers
 * them, but no user grants them (authorize, device, password) and no personal access token has them.
 */
const APPLICATION_ONLY_SCOPES = ['notify'] as const;
/** Lanyard's notification APIs (the recipients API) for an application's own token. */
export const NOTIFY_SCOPE = 'notify';
export const ALL_SCOPES = [...API_SCOPES, ...OIDC_SCOPES, ...APPLICATION_ONLY_SCOPES] as const;
export type Scope = (typeof ALL_SCOPES)[number];

/**
 * `sudo` (contract §1): acting as another user with the `Sudo` header. Only administrators'
 * personal access tokens may carry it, so it is not among the scopes applications get by default.
 */
export const SUDO_SCOPE = 'sudo';

/**
 * What each scope lets the holder do, in plain second-person words: the one table the consent and
 * device pages ("This application will be able to: …"), the access-token form and the applications
 * form read. Product-neutral: what the person knows is their Lanyard account, not an API's paths.
 */
export const SCOPE_DESCRIPTIONS: Record<Scope | typeof SUDO_SCOPE, string> = {
  api: 'Read and change everything your account can reach, including all your groups and projects',
  read_api: 'Read everything your account can reach, including all your groups and projects',
  read_user: 'Read your profile: your name, username and e-mail addresses',
  openid: 'Confirm who you are (your Lanyard account)',
  profile: 'See your name, username, avatar and the groups you belong to',
  email: 'See your primary e-mail address and whether it is confirmed',
  notify: 'Send notifications as the application itself (never granted by a person)',
  sudo: 'Act as any other user when calling the API (administrators only)',
};

export const isScope = (s: string): s is Scope => (ALL_SCOPES as readonly string[]).includes(s);

/** What a user can grant an application that registered `scopes`: all but the application-only ones. */
export const userGrantableScopes = <S extends string>(scopes: readonly S[]): S[] =>
  scopes.filter((s) => !(APPLICATION_ONLY_SCOPES as readonly string[]).includes(s));

/**
 * The scopes a personal access token may carry (sudo: administrators only). Not the OpenID Connect
 * scopes: a personal access token gets no ID token and they open nothing under /api/v4.
 */
export const PERSONAL_ACCESS_TOKEN_SCOPES = [...API_SCOPES, SUDO_SCOPE] as const;

/**
 * The scopes this user's personal access token may carry: sudo for administrators only. The token
 * form offers exactly these, and createPersonalAccessToken refuses any other.
 */
export const personalAccessTokenScopesFor = (user: { is_admin: boolean }): readonly string[] =>
  user.is_admin ? PERSONAL_ACCESS_TOKEN_SCOPES : API_SCOPES;

/** Split a space- (or comma-) separated scope string; undefined when any scope is unknown or it is empty. */
export function parseScopeString(text: string): Scope[] | undefined {
  const parts = text.split(/[\s,]+/).filter(Boolean);
  if (!parts.length || !parts.every(isScope)) return undefined;
  return [...new Set(parts)] as Scope[];
}

/** Parse scopes given by an operator or a form; throws a domain error naming the bad ones. */
export function requireScopes<S extends string = Scope>(
  text: string | string[],
  allowed: readonly S[] = ALL_SCOPES as unknown as readonly S[],
): S[] {
  const parts = (Array.isArray(text) ? text.join(' ') : text).split(/[\s,]+/).filter(Boolean);
  if (!parts.length) throw invalidField('scopes', `scopes must not be empty (choose from: ${allowed.join(', ')})`);
  const unknown = parts.filter((p) => !(allowed as readonly string[]).includes(p));
  if (unknown.length)
    throw invalidField(
      'scopes',
      `unknown scope${unknown.length > 1 ? 's' : ''}: ${unknown.join(', ')} (choose from: ${allowed.join(', ')})`,
    );
  return [...new Set(parts)] as S[];
}

/** A scope string for the wire: space-separated, in canonical order. */
export const formatScopes = (scopes: readonly string[]): string => sortScopes(scopes).join(' ');
/** The canonical order; scopes not in it (the OpenID Connect ones) go first, in their given order. */
export const SCOPE_ORDER: readonly string[] = [...PERSONAL_ACCESS_TOKEN_SCOPES, ...APPLICATION_ONLY_SCOPES];
export const sortScopes = (scopes: readonly string[]): string[] =>
  [...scopes].sort((a, b) => SCOPE_ORDER.indexOf(a) - SCOPE_ORDER.indexOf(b));

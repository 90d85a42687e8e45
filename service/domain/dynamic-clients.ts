// Dynamic client registration (RFC 7591) and its read and delete (RFC 7592), in the one mode Lanyard
// offers (DYNAMIC_CLIENT_REGISTRATION=public): public clients (token_endpoint_auth_method `none`,
// so PKCE on every authorization, authorize-request.ts), the code flow only, redirect URIs that are
// `https` or `http` on a loopback host, and scopes from a configured set. Such an application
// belongs to nobody, is never trusted, is always asked for consent, and is pruned when unused for
// 30 days (retention.ts). Its registration access token is random and kept only as a digest.
// Refusals are results naming RFC 7591 §3.2.2's error; nothing is written on a refusal.
import type { DbOrTrx } from '../db/schema';
import { type ApplicationRecord, deleteApplication, findApplicationById, registerApplication } from './applications';
import { reserveAttempt, type Throttle } from './rate-limit';
import { isScope, sortScopes } from './scopes';
import { randomHex, safeEqual, sha256Hex } from './secrets';

/** Registrations one address may make per window (checked before anything is written). */
export const REGISTRATION_LIMIT = 10;
export const REGISTRATION_WINDOW_SECONDS = 600;
/** Redirect URIs one registration may carry. */
export const MAX_DYNAMIC_REDIRECT_URIS = 10;
const MAX_URI_LENGTH = 2048;
const DEFAULT_CLIENT_NAME = 'Dynamically registered client';

/** What a registered client may ask for (RFC 7591 §2). Lanyard issues refresh tokens with codes. */
export const DYNAMIC_GRANT_TYPES = ['authorization_code', 'refresh_token'] as const;

export type RegistrationRefusal =
  | { ok: false; error: 'invalid_redirect_uri' | 'invalid_client_metadata'; description: string }
  | { ok: false; error: 'rate_limited'; throttle: Throttle };

export interface DynamicClient {
  application: ApplicationRecord;
  registrationAccessToken: string;
}

const refuse = (error: 'invalid_redirect_uri' | 'invalid_client_metadata', description: string) =>
  ({ ok: false, error, description }) as const;

const LOOPBACK_HOSTS = new Set(['127.0.0.1', '[::1]', 'localhost']);

/** Why a redirect URI may not be registered dynamically, or undefined. */
function redirectUriProblem(uri: string): string | undefined {
  if (uri.length > MAX_URI_LENGTH || uri !== uri.trim() || /\s/.test(uri)) return `${uri} is not a valid URI`;
  if (uri.includes('#')) return `${uri} must not contain a fragment`;
  let url: URL;
  try {
    url = new URL(uri);
  } catch {
    return `${uri} is not an absolute URI`;
  }
  if (url.username || url.password) return `${uri} must not contain user information`;
  if (url.protocol === 'https:' && url.hostname) return undefined;
  // RFC 8252 §7.3 (and §8.3's localhost, which MCP clients use): a native client's own loopback listener.
  if (url.protocol === 'http:' && LOOPBACK_HOSTS.has(url.hostname)) return undefined;
  return `${uri} must use https, or http on a loopback host (127.0.0.1, [::1], localhost)`;
}

/** A metadata member that must be an array of strings, or undefined when absent. */
function stringArray(metadata: Record<string, unknown>, name: string): string[] | undefined | false {
  const v = metadata[name];
  if (v === undefined || v === null) return undefined;
  if (!Array.isArray(v) || !v.every((e) => typeof e === 'string')) return false;
  return v as string[];
}

export interface RegistrationInput {
  /** The request body: RFC 7591 §2 client metadata (unknown members are ignored, §2). */
  metadata: unknown;
  address: string;
  /** The scopes a dynamically registered client may hold (DYNAMIC_CLIENT_REGISTRATION_SCOPES). */
  allowedScopes: readonly string[];
}

/** The checked metadata, or the refusal (RFC 7591 §3.2.2). Pure: reads and writes nothing. */
export function checkClientMetadata(
  metadata: unknown,
  allowedScopes: readonly string[],
): { ok: true; name: string; redirectUris: string[]; scopes: string[] } | RegistrationRefusal {
  if (!metadata || typeof metadata !== 'object' || Array.isArray(metadata))
    return refuse('invalid_client_metadata', 'The registration request must be a JSON object.');
  const m = metadata as Record<string, unknown>;
  const redirectUris = stringArray(m, 'redirect_uris');
  if (!redirectUris || redirectUris.length === 0)
    return refuse('invalid_redirect_uri', 'redirect_uris must be a non-empty array of URIs.');
  if (redirectUris.length > MAX_DYNAMIC_REDIRECT_URIS)
    return refuse('invalid_redirect_uri', `At most ${MAX_DYNAMIC_REDIRECT_URIS} redirect_uris may be registered.`);
  for (const uri of redirectUris) {
    const problem = redirectUriProblem(uri);
    if (problem) return refuse('invalid_redirect_uri', problem);
  }
  const method = m.token_endpoint_auth_method;
  if (method !== undefined && method !== 'none')
    return refuse(
      'invalid_client_metadata',
      'Only public clients may register: token_endpoint_auth_method must be none.',
    );
  const grantTypes = stringArray(m, 'grant_types');
  if (grantTypes === false || grantTypes?.some((g) => !(DYNAMIC_GRANT_TYPES as readonly string[]).includes(g)))
    return refuse('invalid_client_metadata', `grant_types may hold only ${DYNAMIC_GRANT_TYPES.join(', ')}.`);
  if (grantTypes && !grantTypes.includes('authorization_code'))
    return refuse('invalid_client_metadata', 'grant_types must include authorization_code.');
  const responseTypes = stringArray(m, 'response_types');
  if (responseTypes === false || responseTypes?.some((r) => r !== 'code'))
    return refuse('invalid_client_metadata', 'response_types may hold only code.');
  const clientName = m.client_name;
  if (clientName !== undefined && (typeof clientName !== 'string' || clientName.trim().length > 255))
    return refuse('invalid_client_metadata', 'client_name must be a string of at most 255 characters.');
  const scope = m.scope;
  if (scope !== undefined && typeof scope !== 'string')
    return refuse('invalid_client_metadata', 'scope must be a string of space-separated scopes.');
  const asked = scope === undefined ? undefined : scope.split(' ').filter(Boolean);
  if (asked?.some((s) => !isScope(s) && s !== 'offline_access'))
    return refuse('invalid_client_metadata', 'scope holds a scope this server does not know.');
  // §2: the server may replace requested values; it keeps what a dynamic client may hold.
  const scopes = asked === undefined ? [...allowedScopes] : asked.filter((s) => allowedScopes.includes(s));
  if (scopes.length === 0)
    return refuse('invalid_client_metadata', `scope must include one of: ${allowedScopes.join(' ')}.`);
  const name = typeof clientName === 'string' && clientName.trim() ? clientName.trim() : DEFAULT_CLIENT_NAME;
  return { ok: true, name, redirectUris: [...new Set(redirectUris)], scopes: sortScopes([...new Set(scopes)]) };
}

/**
 * Register a client (RFC 7591 §3): the metadata checked first, then one admission on the
 * address's registration counter (an upsert that admits only under the limit, so 50 concurrent
 * requests register at most REGISTRATION_LIMIT), then the application.
 */
export async function registerDynamicClient(
  db: DbOrTrx,
  input: RegistrationInput,
): Promise<({ ok: true } & DynamicClient) | RegistrationRefusal> {
  const checked = checkClientMetadata(input.metadata, input.allowedScopes);
  if (!checked.ok) return checked;
  const admission = await reserveAttempt(db, [
    {
      key: `registrations:addr:${input.address}`,
      limit: REGISTRATION_LIMIT,
      windowSeconds: REGISTRATION_WINDOW_SECONDS,
    },
  ]);
  if (!admission.ok) return { ok: false, error: 'rate_limited', throttle: admission.throttle };
  const registrationAccessToken = randomHex();
  const { application } = await registerApplication(db, {
    name: checked.name,
    redirectUris: checked.redirectUris,
    scopes: checked.scopes,
    confidential: false,
    trusted: false,
    ownerId: null,
    registrationAccessToken,
    actor: 'dynamic_registration',
    ipAddress: input.address,
  });
  return { ok: true, application, registrationAccessToken };
}

/**
 * RFC 7592 §2: the dynamically registered client `clientId` when `token` is its registration
 * access token (compared in constant time), else undefined — an unknown client, another client's
 * token and a wrong token are one answer (§2: 401 for all).
 */
export async function findDynamicClient(
  db: DbOrTrx,
  clientId: string,
  token: string,
): Promise<ApplicationRecord | undefined> {
  const row = await db
    .selectFrom('oauth_applications')
    .select(['id', 'registration_access_token_digest'])
    .where('uid', '=', clientId)
    .where('dynamically_registered', '=', true)
    .executeTakeFirst();
  const ok = safeEqual(row?.registration_access_token_digest ?? '0'.repeat(64), sha256Hex(token));
  if (!row || !ok) return undefined;
  return findApplicationById(db, row.id);
}

/** RFC 7592 §2.3: the client deletes itself; its codes and tokens go with it. */
export async function deleteDynamicClient(db: DbOrTrx, application: ApplicationRecord, address: string) {
  await deleteApplication(db, application.uid, `dynamic_registration:${address}`);
}

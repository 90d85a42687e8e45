// Client authentication at the token and revocation endpoints (RFC 6749 §2.3): HTTP Basic
// (wins when present) or client_id/client_secret in the body; public clients send client_id only.
import type { FastifyRequest } from 'fastify';
import type { Db } from '../db/schema';
import {
  type ApplicationRecord,
  checkApplicationSecret,
  findApplicationByUid,
  type SecretCheck,
} from '../domain/applications';
import { nonScalarParam, stringParam } from '../shared/params';
import { InvalidClient, InvalidRequest, TooManyRequests } from './errors';

export const BASIC_REALM = 'Doorkeeper';

export type ClientAuthMethod = 'client_secret_basic' | 'client_secret_post' | 'none';

export interface ClientCredentials {
  clientId: string;
  clientSecret?: string;
  method: ClientAuthMethod;
  /** Sent with HTTP Basic: failures answer with WWW-Authenticate. */
  basic: boolean;
}

export interface AuthenticatedClient {
  application: ApplicationRecord;
  method: ClientAuthMethod;
}

/**
 * RFC 6749 §2.3.1: the client id and secret are form-urlencoded before Basic encoding, so
 * decode `+` as a space and %XX escapes after splitting at the first colon.
 */
function formDecode(text: string): string {
  return decodeURIComponent(text.replace(/\+/g, ' '));
}

/** The client's body parameters (RFC 6749 §2.3.1): single values only. */
export const CLIENT_PARAMETERS = ['client_id', 'client_secret'] as const;

/** The credentials the request carries, or undefined when it carries none. */
export function readClientCredentials(
  request: FastifyRequest,
  params: Record<string, unknown>,
): ClientCredentials | undefined {
  const header = request.headers.authorization;
  if (header && /^basic\s/i.test(header)) {
    const encoded = header.slice(6).trim();
    const decoded = Buffer.from(encoded, 'base64').toString('utf8');
    const colon = decoded.indexOf(':');
    if (!/^[A-Za-z0-9+/]+=*$/.test(encoded) || colon < 0) throw new InvalidClient(BASIC_REALM);
    try {
      const clientId = formDecode(decoded.slice(0, colon));
      const clientSecret = formDecode(decoded.slice(colon + 1));
      // No client id or secret holds a NUL (and PostgreSQL text cannot): one is a failed
      // authentication, answered here rather than as a database error.
      if (!clientId || clientId.includes('\u0000') || clientSecret.includes('\u0000'))
        throw new InvalidClient(BASIC_REALM);
      // An empty password: a public client identifying itself through Basic.
      return clientSecret === ''
        ? { clientId, method: 'none', basic: true }
        : { clientId, clientSecret, method: 'client_secret_basic', basic: true };
    } catch (err) {
      if (err instanceof URIError) throw new InvalidClient(BASIC_REALM);
      throw err;
    }
  }
  if (nonScalarParam(params, CLIENT_PARAMETERS)) throw new InvalidRequest();
  const clientId = stringParam(params, 'client_id');
  if (!clientId) return undefined;
  const clientSecret = stringParam(params, 'client_secret');
  return clientSecret !== undefined && clientSecret !== ''
    ? { clientId, clientSecret, method: 'client_secret_post', basic: false }
    : { clientId, method: 'none', basic: false };
}

/**
 * Authenticate the client: a confidential application needs its secret; a public one may send
 * its client_id alone. A wrong secret counts as a failed credential check of the client address.
 */
export async function authenticateClient(
  db: Db,
  credentials: ClientCredentials,
  address: string,
): Promise<AuthenticatedClient> {
  const basicRealm = credentials.basic ? BASIC_REALM : undefined;
  if (credentials.clientSecret === undefined) {
    const application = await findApplicationByUid(db, credentials.clientId);
    if (!application || application.confidential) throw new InvalidClient(basicRealm);
    return { application, method: 'none' };
  }
  // One query: the application and the address's throttle (a wrong secret counts a failure).
  const check = await checkApplicationSecret(db, {
    uid: credentials.clientId,
    secret: credentials.clientSecret,
    address,
  });
  return { application: acceptClientCheck(credentials, check), method: credentials.method };
}

/**
 * The application a secret check authenticated, or the error a refused one answers: 429 for a
 * throttled address, else invalid_client (with WWW-Authenticate when the secret came by Basic).
 */
export function acceptClientCheck(credentials: ClientCredentials, check: SecretCheck): ApplicationRecord {
  if (check.ok) return check.application;
  if (check.reason === 'rate_limited') throw new TooManyRequests(check.throttle);
  throw new InvalidClient(credentials.basic ? BASIC_REALM : undefined);
}

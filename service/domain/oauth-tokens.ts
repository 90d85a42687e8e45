// OAuth access/refresh tokens: issuing, rotation, revocation and look-up (stored as digests).
import type { DbOrTrx } from '../db/schema';
import { sha256Hex } from './secrets';

export const ACCESS_TOKEN_LIFETIME_SECONDS = 7200;

/** Columns safe to select: never the digests. */
export const ACCESS_TOKEN_COLUMNS = [
  'id', 'application_id', 'user_id', 'scopes', 'expires_at', 'revoked_at', 'refreshed_at', 'parent_id', 'family_id', 'authorization_code_id', 'created_at',
] as const;

/** One indexed look-up of an access token by its digest (API authentication, token info). */
export const findAccessTokenByToken = (db: DbOrTrx, token: string) =>
  db.selectFrom('oauth_access_tokens').select(ACCESS_TOKEN_COLUMNS).where('token_digest', '=', sha256Hex(token)).executeTakeFirst();

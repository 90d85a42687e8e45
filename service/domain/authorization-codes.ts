// Authorization codes (RFC 6749 §4.1): 64 hex, stored as a SHA-256 digest, valid 600 s, single use.
import type { DbOrTrx } from '../db/schema';
import { randomHex, sha256Hex } from './secrets';

export const AUTHORIZATION_CODE_LIFETIME_SECONDS = 600;

export interface NewAuthorizationCode {
  applicationId: number;
  userId: number;
  redirectUri: string;
  scopes: string[];
  codeChallenge?: string;
  codeChallengeMethod?: 'S256' | 'plain';
  /** OpenID Connect: echoed in the ID token. */
  nonce?: string;
  /** OpenID Connect: when the user signed in. */
  authTime?: Date;
}

/** Columns safe to select: never the digest. */
const CODE_COLUMNS = [
  'id',
  'application_id',
  'user_id',
  'redirect_uri',
  'scopes',
  'code_challenge',
  'code_challenge_method',
  'nonce',
  'auth_time',
  'expires_at',
  'used_at',
  'created_at',
] as const;

export async function createAuthorizationCode(
  db: DbOrTrx,
  input: NewAuthorizationCode,
): Promise<{ code: string; id: number }> {
  const code = randomHex();
  const row = await db
    .insertInto('oauth_authorization_codes')
    .values({
      application_id: input.applicationId,
      user_id: input.userId,
      code_digest: sha256Hex(code),
      redirect_uri: input.redirectUri,
      scopes: input.scopes,
      code_challenge: input.codeChallenge ?? null,
      code_challenge_method: input.codeChallenge ? (input.codeChallengeMethod ?? null) : null,
      nonce: input.nonce ?? null,
      auth_time: input.authTime ?? null,
      expires_at: new Date(Date.now() + AUTHORIZATION_CODE_LIFETIME_SECONDS * 1000),
    })
    .returning('id')
    .executeTakeFirstOrThrow();
  return { code, id: row.id };
}

/**
 * Look a code up and lock its row (FOR UPDATE) for the rest of the caller's transaction:
 * concurrent exchanges of one code queue here, and only the first sees it unused.
 */
export const lockAuthorizationCode = (trx: DbOrTrx, code: string) =>
  trx
    .selectFrom('oauth_authorization_codes')
    .select(CODE_COLUMNS)
    .where('code_digest', '=', sha256Hex(code))
    .forUpdate()
    .executeTakeFirst();

export type AuthorizationCodeRecord = NonNullable<Awaited<ReturnType<typeof lockAuthorizationCode>>>;

export async function markAuthorizationCodeUsed(trx: DbOrTrx, id: number): Promise<void> {
  await trx.updateTable('oauth_authorization_codes').set({ used_at: new Date() }).where('id', '=', id).execute();
}

/** When the user behind a grant signed in (OIDC Core §12.2: a refreshed ID token keeps auth_time). */
export async function findAuthorizationCodeAuthTime(db: DbOrTrx, id: number): Promise<Date | undefined> {
  const row = await db
    .selectFrom('oauth_authorization_codes')
    .select('auth_time')
    .where('id', '=', id)
    .executeTakeFirst();
  return row?.auth_time ?? undefined;
}

// Authorization codes (RFC 6749 §4.1): 64 hex, stored as a SHA-256 digest, valid 600 s, single use.
import { sql } from 'kysely';
import type { DbOrTrx, User } from '../db/schema';
import { type SlotOf, statementTemplates } from '../db/statement-templates';
import {
  clientCheckSql,
  NO_SECRET_CHECK,
  type SecretCheck,
  type SecretCheckSlot,
  type SecretCheckTry,
  secretCheckCtesOf,
  secretCheckDecided,
  secretCheckOf,
  secretCheckValues,
  unprefixedClientCheck,
} from './applications';
import { ACCESS_TOKEN_LIFETIME_SECONDS, type IssuedToken } from './oauth-tokens';
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
  /** OpenID Connect: the browser session's sid (domain/sessions.ts), signed into the ID token. */
  sid?: string;
  /** RFC 8176: how the person signed in (the ID token's amr). */
  amr?: string[];
  /** RFC 9449 §10: the authorize request's dpop_jkt. */
  dpopJkt?: string;
  /** RFC 8707: the resources the request named. */
  resources?: string[];
}

type NewCodeSlot =
  | 'applicationId'
  | 'userId'
  | 'codeDigest'
  | 'redirectUri'
  | 'scopes'
  | 'codeChallenge'
  | 'codeChallengeMethod'
  | 'nonce'
  | 'authTime'
  | 'sid'
  | 'amr'
  | 'dpopJkt'
  | 'resources'
  | 'expiresAt';

// On every authorization: built once, bound per call and run straight on the pool
// (db/statement-templates.ts, db/hot-statements.ts).
const inserts = statementTemplates<NewCodeSlot>(1);

export async function createAuthorizationCode(db: DbOrTrx, input: NewAuthorizationCode): Promise<{ code: string }> {
  const code = randomHex();
  // Nothing returned: the redirect needs only the code (a RETURNING is a projection built per
  // execution and a row to send and parse).
  await inserts.run(
    db,
    'insert',
    {
      applicationId: input.applicationId,
      userId: input.userId,
      codeDigest: sha256Hex(code),
      redirectUri: input.redirectUri,
      scopes: input.scopes,
      codeChallenge: input.codeChallenge ?? null,
      codeChallengeMethod: input.codeChallenge ? (input.codeChallengeMethod ?? null) : null,
      nonce: input.nonce ?? null,
      authTime: input.authTime ?? null,
      sid: input.sid ?? null,
      amr: input.amr ?? null,
      dpopJkt: input.dpopJkt ?? null,
      resources: input.resources ?? [],
      expiresAt: new Date(Date.now() + AUTHORIZATION_CODE_LIFETIME_SECONDS * 1000),
    },
    (slot) => sql`
      insert into oauth_authorization_codes (application_id, user_id, code_digest, redirect_uri, scopes,
        code_challenge, code_challenge_method, nonce, auth_time, sid, amr, dpop_jkt, resources, expires_at)
      values (${slot('applicationId')}, ${slot('userId')}, ${slot('codeDigest')}, ${slot('redirectUri')},
        ${slot('scopes')}, ${slot('codeChallenge')}, ${slot('codeChallengeMethod')}, ${slot('nonce')},
        ${slot('authTime')}, ${slot('sid')}, ${slot('amr')}::text[], ${slot('dpopJkt')},
        ${slot('resources')}::text[], ${slot('expiresAt')})
    `,
  );
  return { code };
}

/**
 * Look a code up and lock its row (FOR UPDATE) for the rest of the caller's transaction:
 * concurrent exchanges of one code queue here, and only the first sees it unused.
 */
/**
 * What a PKCE verifier may match (RFC 7636 §4.6), computed by the caller: whether one was sent,
 * and, when well-formed, its S256 transform and its plain value (null when absent or malformed,
 * so that nothing equals them).
 */
export interface VerifierCandidates {
  given: boolean;
  s256: string | null;
  plain: string | null;
}

export interface SpendAuthorizationCodeInput {
  code: string;
  /** The client's application, authenticated before; null with `clientSecret`. */
  applicationId: number | null;
  /**
   * A client secret to check in the same statement (secretCheckCtes, applications.ts): the code is
   * spent only for the application it authenticates, and a refused secret changes nothing but the
   * address's failure counter; nor is it spent for an application that requires DPoP proofs.
   */
  clientSecret?: { uid: string; secret: string; address: string };
  redirectUri: string;
  verifier: VerifierCandidates;
  /** Codes holding `openid` are declined unless the caller signs the ID token before committing. */
  allowOpenid: boolean;
  /**
   * RFC 8707 §2.2: the resources the token request names; they must be among the code's (when it
   * named any), and become the access token's audience (else the code's resources do).
   */
  resources: string[];
  /** The service's clock: the code must not have expired by it; used_at is stamped with it. */
  now: Date;
  /** RFC 9449: the DPoP proof's key; the tokens are bound to it, and a code issued for a dpop_jkt needs it. */
  dpopJkt: string | null;
}

/** The code's row as the statement found it (locked, before being spent), without the digest. */
export interface SpendableCode {
  id: number;
  application_id: number;
  user_id: number;
  scopes: string[];
  nonce: string | null;
  auth_time: Date | null;
  sid: string | null;
  amr: string[] | null;
  resources: string[];
  used_at: Date | null;
  created_at: Date;
  /**
   * Every check but `openid` passed: the code would have been spent with allowOpenid (the caller
   * signs the ID token only then, and spends it with allowOpenid).
   */
  spendable: boolean;
  /** The code's user, for the ID token's claims (null: no such user). */
  user: CodeUser | null;
}

/** What the ID token of a code needs of its user. */
export type CodeUser = Pick<
  User,
  'id' | 'username' | 'name' | 'email' | 'avatar_url' | 'confirmed_at' | 'current_sign_in_at'
>;

export interface SpendAuthorizationCodeResult {
  /** With `clientSecret`: the check's answer (the rest is empty unless it authenticated). */
  clientCheck?: SecretCheck;
  /** Undefined: no such code. */
  code?: SpendableCode;
  /** The token pair issued from the code, when every check passed and this statement spent it. */
  issued?: IssuedToken;
}

type SpendSlot =
  | SecretCheckSlot
  | 'applicationId'
  | 'codeDigest'
  | 'now'
  | 'redirectUri'
  | 'verifierGiven'
  | 's256'
  | 'plain'
  | 'dpopJkt'
  | 'resources'
  | 'allowOpenid'
  | 'accessDigest'
  | 'refreshDigest'
  | 'lifetime';

type SpendRow = Omit<SpendableCode, 'user'> & {
  token_id: number | null;
  token_created_at: Date | null;
  user_username: string | null;
  user_name: string | null;
  user_email: string | null;
  user_avatar_url: string | null;
  user_confirmed_at: Date | null;
  user_current_sign_in_at: Date | null;
};

// Built and compiled once per shape (db/statement-templates.ts): with the client's secret check
// in it, building and compiling it per call took about 87 µs of CPU; bound from its template,
// about 31 (a stubbed driver, no I/O).
const spends = statementTemplates<SpendSlot>(3);
type SpendShape = 'spend' | SecretCheckTry;

function spendStatement(slot: SlotOf<SpendSlot>, shape: SpendShape) {
  // The client: authenticated before (a slot), or by this statement's client_check (the quick
  // check, or the one that counts: applications.ts).
  const client =
    shape !== 'spend'
      ? {
          ctes: sql`${secretCheckCtesOf(slot, shape)},`,
          applicationId: clientCheckSql.authenticatedId(slot),
          dpopRequired: clientCheckSql.dpopRequired,
          from: clientCheckSql.from('code'),
          columns: sql`, ${clientCheckSql.columns}`,
        }
      : {
          ctes: sql``,
          applicationId: sql`${slot('applicationId')}::bigint`,
          dpopRequired: sql`false`,
          from: sql`from code`,
          columns: sql``,
        };
  return sql<SpendRow>`
    with locked as (
      select id, application_id, user_id, redirect_uri, scopes, code_challenge, code_challenge_method, nonce,
        auth_time, sid, amr, dpop_jkt, resources, expires_at, used_at, created_at
      from oauth_authorization_codes
      where code_digest = ${slot('codeDigest')}
      for update
    ),
    ${client.ctes}
    code as (
      select l.id, l.application_id, l.user_id, l.scopes, l.nonce, l.auth_time, l.sid, l.amr, l.resources, l.used_at,
        l.created_at,
        l.used_at is null
          and l.application_id = ${client.applicationId}
          and not ${client.dpopRequired}
          and l.expires_at > ${slot('now')}::timestamptz
          and l.redirect_uri = ${slot('redirectUri')}::text
          and case
            when l.code_challenge is null then not ${slot('verifierGiven')}::boolean
            when l.code_challenge_method = 'S256' then l.code_challenge = ${slot('s256')}::text
            when l.code_challenge_method = 'plain' then l.code_challenge = ${slot('plain')}::text
            else false
          end
          and (l.dpop_jkt is null or l.dpop_jkt = ${slot('dpopJkt')}::text)
          and (cardinality(l.resources) = 0 or ${slot('resources')}::text[] <@ l.resources)
          and coalesce(u.state = 'active', false) as spendable,
        u.username as user_username, u.name as user_name, u.email as user_email, u.avatar_url as user_avatar_url,
        u.confirmed_at as user_confirmed_at, u.current_sign_in_at as user_current_sign_in_at
      from locked as l
      left join users as u on u.id = l.user_id
    ),
    spent as (
      update oauth_authorization_codes as c
      set used_at = ${slot('now')}::timestamptz
      from code
      where c.id = code.id
        and code.spendable
        and (${slot('allowOpenid')}::boolean or not ('openid' = any (code.scopes)))
      returning c.id
    ),
    issued as (
      insert into oauth_access_tokens
        (application_id, user_id, token_digest, refresh_token_digest, scopes, expires_at, authorization_code_id, dpop_jkt,
          resources, audience)
      select code.application_id, code.user_id, ${slot('accessDigest')}, ${slot('refreshDigest')}, code.scopes,
        now() + make_interval(secs => ${slot('lifetime')}::integer), code.id, ${slot('dpopJkt')}::text, code.resources,
        case when cardinality(${slot('resources')}::text[]) > 0 then ${slot('resources')}::text[] else code.resources end
      from spent join code on code.id = spent.id
      returning id, created_at
    )
    select code.id, code.application_id, code.user_id, code.scopes, code.nonce, code.auth_time, code.sid, code.amr,
      code.resources, code.used_at, code.created_at, code.spendable, code.user_username, code.user_name,
      code.user_email, code.user_avatar_url, code.user_confirmed_at, code.user_current_sign_in_at,
      issued.id as token_id, issued.created_at as token_created_at
      ${client.columns}
    ${client.from} left join issued on true
`;
}

/**
 * Exchange a code in ONE statement (RFC 6749 §4.1.3, RFC 7636 §4.6): lock its row (FOR UPDATE),
 * and, only if it is unused, of this client, unexpired, for this redirect URI, matched by the
 * verifier, of an active user (and without `openid` unless allowed), mark it used and insert the
 * token pair. Concurrent exchanges queue on the row lock; each later one finds it used, so exactly
 * one spends it. The row is returned either way: the caller tells a replay (used) from a refusal.
 *
 * The verifier is compared in SQL against the stored challenge, which is not a secret (it travels
 * in the authorization request's URL), so a comparison that is not constant-time leaks nothing.
 */
export async function spendAuthorizationCode(
  db: DbOrTrx,
  input: SpendAuthorizationCodeInput,
): Promise<SpendAuthorizationCodeResult> {
  const accessToken = randomHex();
  const refreshToken = randomHex();
  const secretCheck = input.clientSecret && secretCheckValues(input.clientSecret);
  // Named, not spread (db/row-picker.ts on Node 20's cost of copying properties).
  const check = secretCheck ?? NO_SECRET_CHECK;
  const values: Record<SpendSlot, unknown> = {
    uid: check.uid,
    digest: check.digest,
    key: check.key,
    limit: check.limit,
    windowSeconds: check.windowSeconds,
    applicationId: input.applicationId,
    codeDigest: sha256Hex(input.code),
    now: input.now,
    redirectUri: input.redirectUri,
    verifierGiven: input.verifier.given,
    s256: input.verifier.s256,
    plain: input.verifier.plain,
    dpopJkt: input.dpopJkt,
    resources: input.resources,
    allowOpenid: input.allowOpenid,
    accessDigest: sha256Hex(accessToken),
    refreshDigest: sha256Hex(refreshToken),
    lifetime: ACCESS_TOKEN_LIFETIME_SECONDS,
  };
  const spend = (shape: SpendShape) => spends.run<SpendRow>(db, shape, values, (slot) => spendStatement(slot, shape));
  // A secret: the quick check first; when it did not decide (a wrong secret, an address with
  // failures in its window: nothing was spent), the statement again with the check that counts.
  let { rows } = await spend(secretCheck ? 'quick-secret' : 'spend');
  if (secretCheck && !secretCheckDecided(unprefixedClientCheck(rows[0]))) ({ rows } = await spend('with-secret'));
  const row = rows[0];
  if (secretCheck) {
    const clientCheck = secretCheckOf(secretCheck, unprefixedClientCheck(row));
    if (!clientCheck.ok || row.id === null) return { clientCheck };
    const { code, issued } = resultOf(row);
    return { clientCheck, code, issued };
  }
  if (!row) return {};
  return resultOf(row);

  function resultOf(row: (typeof rows)[number]): SpendAuthorizationCodeResult {
    const { token_id: tokenId, token_created_at: tokenCreatedAt } = row;
    // Named one by one (db/row-picker.ts on why): client_check's columns are not the code's.
    const code: SpendableCode = {
      id: row.id,
      application_id: row.application_id,
      user_id: row.user_id,
      scopes: row.scopes,
      nonce: row.nonce,
      auth_time: row.auth_time,
      sid: row.sid,
      amr: row.amr,
      resources: row.resources,
      used_at: row.used_at,
      created_at: row.created_at,
      spendable: row.spendable,
      user:
        row.user_username === null || row.user_name === null || row.user_email === null
          ? null
          : {
              id: row.user_id,
              username: row.user_username,
              name: row.user_name,
              email: row.user_email,
              avatar_url: row.user_avatar_url,
              confirmed_at: row.user_confirmed_at,
              current_sign_in_at: row.user_current_sign_in_at,
            },
    };
    if (tokenId === null || tokenCreatedAt === null) return { code };
    return {
      code,
      issued: {
        id: tokenId,
        accessToken,
        refreshToken,
        scopes: code.scopes,
        expiresIn: ACCESS_TOKEN_LIFETIME_SECONDS,
        createdAt: tokenCreatedAt,
        audience: input.resources.length > 0 ? input.resources : code.resources,
      },
    };
  }
}

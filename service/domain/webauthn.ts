// Passkeys and security keys (WebAuthn Level 3): registration, the assertion check of a sign-in
// (second factor after the password, or passwordless with a discoverable credential), and the
// person's list of credentials. The ceremonies' cryptography (CBOR, COSE keys, attestation
// statements, authenticator data flags, the counter rule) is @simplewebauthn/server's; the rules
// around it are here: challenges single use, five minutes, bound to the browser session (a table,
// so they hold across Lambda instances); the relying party is PUBLIC_URL (RP ID its host, origin
// its origin); attestation `none`; a counter that does not move forward refuses the assertion
// unless it is 0 on both sides (authenticators without a counter); a credential whose backup
// eligibility changed is refused; a blocked user's credential never signs in; every assertion is
// a credential check of the brute-force limits (rate-limit.ts: reserve, verify, settle).
import { createHash } from 'node:crypto';
import {
  type AuthenticationResponseJSON,
  generateAuthenticationOptions,
  generateRegistrationOptions,
  type PublicKeyCredentialCreationOptionsJSON,
  type PublicKeyCredentialRequestOptionsJSON,
  type RegistrationResponseJSON,
  verifyAuthenticationResponse,
  verifyRegistrationResponse,
} from '@simplewebauthn/server';
import { sql } from 'kysely';
import type { DbOrTrx, User } from '../db/schema';
import { withTransaction } from '../db/transaction';
import { recordAudit } from './audit';
import { type AuthenticationMethod, authenticationMethods } from './authentication-methods';
import { invalidField, notFound, uniqueViolation } from './errors';
import { type Page, windowPage } from './page';
import { addressLimit, type Throttle, reserveAccountAttempt, reserveAttempt, settleSuccess } from './rate-limit';
import { sha256Hex } from './secrets';
import { type AuditContext, createFirstRecoveryCodes, dropRecoveryCodesWithoutSecondFactor } from './two-factor';
import { findUserById, getUserByUsername } from './users';

export const WEBAUTHN_CHALLENGE_SECONDS = 300;
export const CREDENTIAL_NAME_MAX = 100;
/** A WebAuthn response larger than this is refused before it is parsed (a real one is ~1–3 KB). */
export const WEBAUTHN_RESPONSE_MAX = 16_384;

/** The relying party: PUBLIC_URL's host is the RP ID, its origin the one origin accepted. */
export interface RelyingParty {
  id: string;
  origin: string;
  name: string;
}

export function relyingPartyOf(publicUrl: string, name: string): RelyingParty {
  const url = new URL(publicUrl);
  return { id: url.hostname, origin: url.origin, name };
}

export type ChallengePurpose = 'registration' | 'second_factor' | 'passwordless';

/** A credential as the account page and the CLI show it (never the key). */
export interface WebAuthnCredentialView {
  id: number;
  name: string;
  /** `passkey`: may be synced across devices (backup eligible); `security_key`: bound to one authenticator. */
  kind: 'passkey' | 'security_key';
  backed_up: boolean;
  created_at: Date;
  last_used_at: Date | null;
}

const viewOf = (row: {
  id: number;
  name: string;
  device_type: string;
  backed_up: boolean;
  created_at: Date;
  last_used_at: Date | null;
}): WebAuthnCredentialView => ({
  id: row.id,
  name: row.name,
  kind: row.device_type === 'multiDevice' ? 'passkey' : 'security_key',
  backed_up: row.backed_up,
  created_at: row.created_at,
  last_used_at: row.last_used_at,
});

export async function listWebAuthnCredentials(db: DbOrTrx, userId: number): Promise<WebAuthnCredentialView[]> {
  const rows = await db
    .selectFrom('webauthn_credentials')
    .select(['id', 'name', 'device_type', 'backed_up', 'created_at', 'last_used_at'])
    .where('user_id', '=', userId)
    .orderBy('id')
    .execute();
  return rows.map(viewOf);
}

/** One page of them (the two-factor page, 20 a page) and their total, in one statement. */
export async function listWebAuthnCredentialsPage(
  db: DbOrTrx,
  userId: number,
  { limit, offset }: { limit: number; offset: number },
): Promise<Page<WebAuthnCredentialView>> {
  const mine = db.selectFrom('webauthn_credentials').where('user_id', '=', userId);
  const rows = await mine
    .select([
      'id',
      'name',
      'device_type',
      'backed_up',
      'created_at',
      'last_used_at',
      sql<string>`count(*) over ()`.as('total'),
    ])
    .orderBy('id')
    .limit(limit)
    .offset(offset)
    .execute();
  const page = await windowPage(
    rows,
    async () => (await mine.select((eb) => eb.fn.countAll().as('n')).executeTakeFirstOrThrow()).n,
    offset,
  );
  return { total: page.total, rows: page.rows.map(viewOf) };
}

/** The user handle (WebAuthn §5.4.3): opaque, stable per account, no personal data. */
const userHandleOf = (userId: number) => createHash('sha256').update(`lanyard-user:${userId}`).digest().subarray(0, 32);

async function storeChallenge(
  db: DbOrTrx,
  challenge: string,
  purpose: ChallengePurpose,
  sessionId: string,
  userId: number | null,
) {
  await db
    .insertInto('webauthn_challenges')
    .values({
      challenge_digest: sha256Hex(challenge),
      purpose,
      session_digest: sha256Hex(sessionId),
      user_id: userId,
      expires_at: new Date(Date.now() + WEBAUTHN_CHALLENGE_SECONDS * 1000),
    })
    .execute();
}

/**
 * Spend a challenge: true once, for the session and purpose (and user) it was made for, within its
 * five minutes. The delete is the replay guard: of two requests with one challenge, one finds it.
 */
async function consumeChallenge(
  db: DbOrTrx,
  challenge: string,
  purpose: ChallengePurpose,
  sessionId: string,
  userId: number | null,
): Promise<boolean> {
  const row = await db
    .deleteFrom('webauthn_challenges')
    .where('challenge_digest', '=', sha256Hex(challenge))
    .where('purpose', '=', purpose)
    .where('session_digest', '=', sha256Hex(sessionId))
    .where((eb) => (userId === null ? eb('user_id', 'is', null) : eb('user_id', '=', userId)))
    .where('expires_at', '>', new Date())
    .returning('id')
    .executeTakeFirst();
  return row !== undefined;
}

/** Expired challenges (the retention job's, and each new ceremony's share of the clean-up). */
export async function deleteExpiredChallenges(db: DbOrTrx): Promise<void> {
  await db.deleteFrom('webauthn_challenges').where('expires_at', '<=', new Date()).execute();
}

/** What the browser sent, parsed just enough to find the challenge; undefined when it is not WebAuthn JSON. */
function parseResponse<T extends RegistrationResponseJSON | AuthenticationResponseJSON>(
  text: string,
): { response: T; challenge: string } | undefined {
  if (text.length === 0 || text.length > WEBAUTHN_RESPONSE_MAX) return undefined;
  try {
    const response = JSON.parse(text) as T;
    if (typeof response !== 'object' || response === null || typeof response.id !== 'string') return undefined;
    if (typeof response.response?.clientDataJSON !== 'string') return undefined;
    const clientData = JSON.parse(Buffer.from(response.response.clientDataJSON, 'base64url').toString('utf8'));
    if (typeof clientData?.challenge !== 'string' || clientData.challenge.length > 256) return undefined;
    return { response, challenge: clientData.challenge };
  } catch {
    return undefined;
  }
}

// ---- Registration ----

export async function registrationOptions(
  db: DbOrTrx,
  rp: RelyingParty,
  user: Pick<User, 'id' | 'username' | 'name'>,
  sessionId: string,
): Promise<PublicKeyCredentialCreationOptionsJSON> {
  const existing = await db
    .selectFrom('webauthn_credentials')
    .select(['credential_id', 'transports'])
    .where('user_id', '=', user.id)
    .execute();
  const options = await generateRegistrationOptions({
    rpName: rp.name,
    rpID: rp.id,
    userName: user.username,
    userDisplayName: user.name,
    userID: new Uint8Array(userHandleOf(user.id)),
    attestationType: 'none',
    // The same authenticator twice for one account is refused by the browser itself.
    excludeCredentials: existing.map((c) => ({ id: c.credential_id, transports: c.transports })),
    // Discoverable where the authenticator can (a passkey signs in without a username); user
    // verification where it can (a passkey alone then counts as two factors).
    authenticatorSelection: { residentKey: 'preferred', userVerification: 'preferred' },
    timeout: WEBAUTHN_CHALLENGE_SECONDS * 1000,
  });
  await deleteExpiredChallenges(db);
  await storeChallenge(db, options.challenge, 'registration', sessionId, user.id);
  return options;
}

const REGISTER_UNIQUE = {
  webauthn_credentials_credential_id_key: 'This passkey or security key is already registered.',
  webauthn_credentials_user_id_name_key:
    'You already have a passkey or security key with this name. Enter a different name',
};

/** A credential name as typed: trimmed, 1–100 characters. */
function credentialName(name: string): string {
  const trimmed = name.trim();
  if (trimmed.length === 0) throw invalidField('name', 'Enter a name for your passkey or security key');
  if (trimmed.length > CREDENTIAL_NAME_MAX)
    throw invalidField('name', `Name must be ${CREDENTIAL_NAME_MAX} characters or fewer`);
  return trimmed;
}

export interface RegisteredCredential {
  credential: WebAuthnCredentialView;
  /** The first second factor brings recovery codes (plaintext, shown once); undefined otherwise. */
  recoveryCodes?: string[];
}

/**
 * Verify a registration (WebAuthn §7.1) against the challenge this session was given, and store
 * the credential. Refusals are DomainErrors on the field `credential` (or `name`); nothing is stored.
 */
export async function registerWebAuthnCredential(
  db: DbOrTrx,
  rp: RelyingParty,
  input: { userId: number; sessionId: string; name: string; response: string },
  audit: AuditContext,
): Promise<RegisteredCredential> {
  const name = credentialName(input.name);
  const parsed = parseResponse<RegistrationResponseJSON>(input.response);
  if (!parsed) throw invalidField('credential', 'The browser sent no valid passkey registration. Try again.');
  if (!(await consumeChallenge(db, parsed.challenge, 'registration', input.sessionId, input.userId)))
    throw invalidField('credential', 'This registration has expired or was already used. Try again.');
  let verified: Awaited<ReturnType<typeof verifyRegistrationResponse>>;
  try {
    verified = await verifyRegistrationResponse({
      response: parsed.response,
      expectedChallenge: parsed.challenge,
      expectedOrigin: rp.origin,
      expectedRPID: rp.id,
      requireUserVerification: false,
    });
  } catch (err) {
    throw invalidField('credential', `The passkey registration was refused: ${(err as Error).message}`);
  }
  if (!verified.verified) throw invalidField('credential', 'The passkey registration could not be verified.');
  const info = verified.registrationInfo;
  return withTransaction(db, async (trx) => {
    const before = await findUserById(trx, input.userId);
    let row: { id: number; created_at: Date };
    try {
      row = await trx
        .insertInto('webauthn_credentials')
        .values({
          user_id: input.userId,
          credential_id: info.credential.id,
          public_key: Buffer.from(info.credential.publicKey),
          sign_count: info.credential.counter,
          transports: (info.credential.transports ?? []).filter((t) => /^[a-z-]{1,20}$/.test(t)),
          device_type: info.credentialDeviceType,
          backed_up: info.credentialBackedUp,
          name,
        })
        .returning(['id', 'created_at'])
        .executeTakeFirstOrThrow();
    } catch (err) {
      const known = uniqueViolation(err, REGISTER_UNIQUE);
      if (known) throw invalidField(known.message.includes('name') ? 'name' : 'credential', known.message);
      throw err;
    }
    // Recovery codes come with the first second factor, as with TOTP enrolment.
    const recoveryCodes =
      before && before.otp_secret === null && before.webauthn_credential_count === 0
        ? await createFirstRecoveryCodes(trx, input.userId)
        : undefined;
    await recordAudit(trx, {
      actor: audit.actor,
      ipAddress: audit.ipAddress,
      action: 'user.webauthn_register',
      targetType: 'user',
      targetId: input.userId,
      details: { name, kind: info.credentialDeviceType === 'multiDevice' ? 'passkey' : 'security_key' },
    });
    return {
      credential: viewOf({
        id: row.id,
        name,
        device_type: info.credentialDeviceType,
        backed_up: info.credentialBackedUp,
        created_at: row.created_at,
        last_used_at: null,
      }),
      recoveryCodes,
    };
  });
}

export async function renameWebAuthnCredential(
  db: DbOrTrx,
  userId: number,
  credentialId: number,
  newName: string,
  audit: AuditContext,
): Promise<void> {
  const name = credentialName(newName);
  await withTransaction(db, async (trx) => {
    try {
      const row = await trx
        .updateTable('webauthn_credentials')
        .set({ name })
        .where('id', '=', credentialId)
        .where('user_id', '=', userId)
        .returning('id')
        .executeTakeFirst();
      if (!row) throw notFound('No such passkey or security key.');
    } catch (err) {
      const known = uniqueViolation(err, REGISTER_UNIQUE);
      if (known) throw invalidField('name', known.message);
      throw err;
    }
    await recordAudit(trx, {
      ...audit,
      action: 'user.webauthn_rename',
      targetType: 'user',
      targetId: userId,
      details: { name },
    });
  });
}

/**
 * Remove one credential (by its row id, or by name for the CLI). The last second factor gone, the
 * recovery codes go too (two-factor.ts).
 */
export async function removeWebAuthnCredential(
  db: DbOrTrx,
  userId: number,
  which: { id: number } | { name: string },
  audit: AuditContext,
): Promise<WebAuthnCredentialView> {
  return withTransaction(db, async (trx) => {
    let query = trx.deleteFrom('webauthn_credentials').where('user_id', '=', userId);
    query = 'id' in which ? query.where('id', '=', which.id) : query.where('name', '=', which.name);
    const row = await query
      .returning(['id', 'name', 'device_type', 'backed_up', 'created_at', 'last_used_at'])
      .executeTakeFirst();
    if (!row) throw notFound('No such passkey or security key.');
    await dropRecoveryCodesWithoutSecondFactor(trx, userId);
    await recordAudit(trx, {
      ...audit,
      action: 'user.webauthn_remove',
      targetType: 'user',
      targetId: userId,
      details: { name: row.name },
    });
    return viewOf(row);
  });
}

/** `users webauthn remove USER NAME`. */
export async function removeWebAuthnCredentialByName(
  db: DbOrTrx,
  username: string,
  name: string,
  audit: AuditContext,
): Promise<WebAuthnCredentialView> {
  const user = await getUserByUsername(db, username);
  return removeWebAuthnCredential(db, user.id, { name }, audit);
}

// ---- Sign-in ----

export async function authenticationOptions(
  db: DbOrTrx,
  rp: RelyingParty,
  purpose: 'second_factor' | 'passwordless',
  sessionId: string,
  userId: number | null,
): Promise<PublicKeyCredentialRequestOptionsJSON> {
  const allow =
    purpose === 'second_factor' && userId !== null
      ? await db
          .selectFrom('webauthn_credentials')
          .select(['credential_id', 'transports'])
          .where('user_id', '=', userId)
          .execute()
      : [];
  const options = await generateAuthenticationOptions({
    rpID: rp.id,
    allowCredentials: allow.map((c) => ({ id: c.credential_id, transports: c.transports })),
    // Passwordless: the authenticator must verify the person (the second factor of the two).
    userVerification: purpose === 'passwordless' ? 'required' : 'preferred',
    timeout: WEBAUTHN_CHALLENGE_SECONDS * 1000,
  });
  await deleteExpiredChallenges(db);
  await storeChallenge(db, options.challenge, purpose, sessionId, purpose === 'second_factor' ? userId : null);
  return options;
}

export type AssertionRefusal =
  | 'malformed'
  | 'expired'
  | 'unknown_credential'
  | 'other_account'
  | 'verification_failed'
  | 'counter'
  | 'backup_state'
  | 'blocked'
  | 'locked';

export type AssertionResult =
  | { ok: true; user: User; amr: AuthenticationMethod[] }
  | { ok: false; reason: AssertionRefusal; detail?: string }
  | { ok: false; reason: 'rate_limited'; retryAfter: number; throttle: Throttle };

/**
 * Check a WebAuthn assertion (WebAuthn §7.2) for a sign-in: as the second factor of `userId`, or
 * passwordless (any account's discoverable credential; user verification required). The attempt
 * is reserved on the address (and then the account) before anything is verified, and a refusal
 * leaves it counted, like a wrong code. A success updates the counter, backup state and last use
 * in one conditional statement: of two requests carrying one assertion, one wins.
 */
export async function checkWebAuthnAssertion(
  db: DbOrTrx,
  rp: RelyingParty,
  input: {
    purpose: 'second_factor' | 'passwordless';
    userId: number | null;
    sessionId: string;
    response: string;
    address: string;
  },
): Promise<AssertionResult> {
  const admission = await reserveAttempt(db, [addressLimit(input.address)]);
  if (!admission.ok)
    return {
      ok: false,
      reason: 'rate_limited',
      retryAfter: admission.throttle.retryAfter,
      throttle: admission.throttle,
    };
  const reservation = admission.reservation;
  const parsed = parseResponse<AuthenticationResponseJSON>(input.response);
  if (!parsed) return { ok: false, reason: 'malformed' };
  const boundUser = input.purpose === 'second_factor' ? input.userId : null;
  if (!(await consumeChallenge(db, parsed.challenge, input.purpose, input.sessionId, boundUser)))
    return { ok: false, reason: 'expired' };
  const credential = await db
    .selectFrom('webauthn_credentials')
    .select(['id', 'user_id', 'credential_id', 'public_key', 'sign_count', 'transports', 'device_type'])
    .where('credential_id', '=', parsed.response.id)
    .executeTakeFirst();
  if (!credential) return { ok: false, reason: 'unknown_credential' };
  if (input.purpose === 'second_factor' && credential.user_id !== input.userId)
    return { ok: false, reason: 'other_account' };
  const user = await findUserById(db, credential.user_id);
  if (!user) return { ok: false, reason: 'unknown_credential' };
  reservation.account = await reserveAccountAttempt(db, user.id);
  if (!reservation.account) return { ok: false, reason: 'locked' };
  let info: Awaited<ReturnType<typeof verifyAuthenticationResponse>>['authenticationInfo'];
  try {
    const verified = await verifyAuthenticationResponse({
      response: parsed.response,
      expectedChallenge: parsed.challenge,
      expectedOrigin: rp.origin,
      expectedRPID: rp.id,
      credential: {
        id: credential.credential_id,
        publicKey: new Uint8Array(credential.public_key),
        counter: Number(credential.sign_count),
        transports: credential.transports,
      },
      requireUserVerification: input.purpose === 'passwordless',
    });
    if (!verified.verified) return { ok: false, reason: 'verification_failed' };
    info = verified.authenticationInfo;
  } catch (err) {
    const message = (err as Error).message;
    return { ok: false, reason: /counter/i.test(message) ? 'counter' : 'verification_failed', detail: message };
  }
  // WebAuthn §6.1.3: backup eligibility is fixed when the credential is made; a change means
  // another authenticator answered for it.
  if (info.credentialDeviceType !== credential.device_type) return { ok: false, reason: 'backup_state' };
  // Verified, but a blocked person never signs in (not a failed guess: released).
  if (user.state !== 'active') {
    await settleSuccess(db, reservation);
    return { ok: false, reason: 'blocked' };
  }
  const moved = await db
    .updateTable('webauthn_credentials')
    .set({ sign_count: info.newCounter, backed_up: info.credentialBackedUp, last_used_at: new Date() })
    .where('id', '=', credential.id)
    // An authenticator without a counter sends 0 every time; any other must move forward.
    .where((eb) => (info.newCounter === 0 ? eb('sign_count', '=', 0) : eb('sign_count', '<', info.newCounter)))
    .executeTakeFirst();
  if (moved.numUpdatedRows === 0n) return { ok: false, reason: 'counter' };
  await settleSuccess(db, reservation, { clearAccount: true });
  const key: AuthenticationMethod = credential.device_type === 'multiDevice' ? 'swk' : 'hwk';
  const steps: AuthenticationMethod[] = input.purpose === 'second_factor' ? ['pwd', key] : [key];
  if (info.userVerified) steps.push('user');
  return { ok: true, user: { ...user, failed_attempts: 0, locked_until: null }, amr: authenticationMethods(steps) };
}

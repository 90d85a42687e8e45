// DPoP (RFC 9449): checking a proof (§4.3), server nonces (§8, §9), the replay store (§11.1) and
// the binding rule of a token to a key (§6.1, §7.1). The token endpoint (oauth/) and the protected
// resources (http/, routes/oauth) call these and turn a DpopProofError into their own response.
// Every JOSE step is jose's: the signature, `typ`, the algorithm allow-list, the embedded key (which
// must be public) and the thumbprint (RFC 7638).
import { createHash } from 'node:crypto';
import { calculateJwkThumbprint, EmbeddedJWK, errors, type JWTPayload, jwtVerify } from 'jose';
import { sql } from 'kysely';
import type { DbOrTrx } from '../db/schema';
import { sha256Hex } from './secrets';
import { type KeyRing, signWithRing, verifyWithRing } from './service-keys';

/** §5.1 `dpop_signing_alg_values_supported`: asymmetric algorithms only (never `none` or HS*). */
export const DPOP_SIGNING_ALGS = [
  'ES256',
  'ES384',
  'ES512',
  'PS256',
  'PS384',
  'PS512',
  'RS256',
  'RS384',
  'RS512',
  'Ed25519',
  'EdDSA',
] as const;

/**
 * §11.1: a proof is accepted while its `iat` is this close to the service's clock (either way, for
 * clock skew); its `jti` is remembered as long, so within the window a replay is always caught.
 */
const DPOP_PROOF_WINDOW_SECONDS = 300;
/** A server nonce (§8) changes every NONCE_STEP seconds and is accepted for NONCE_STEPS steps. */
const NONCE_STEP_SECONDS = 60;
const NONCE_STEPS = 5;
/** A proof is a compact JWS with a small key: anything longer is not one (no parsing of megabytes). */
const MAX_PROOF_LENGTH = 8192;
const MAX_JTI_LENGTH = 256;

type DpopErrorCode = 'invalid_dpop_proof' | 'use_dpop_nonce';

/** A proof refused (§7.1, §8): `nonce` is the DPoP-Nonce to send with use_dpop_nonce. */
export class DpopProofError extends Error {
  constructor(
    readonly error: DpopErrorCode,
    readonly description: string,
    readonly nonce?: string,
  ) {
    super(description);
    this.name = 'DpopProofError';
  }
}

/** A proof that passed every check: the key's thumbprint (cnf.jkt), its jti and iat. */
export interface DpopProof {
  jkt: string;
  jti: string;
  iat: number;
}

export interface DpopRequest {
  /** The request's `DPoP` header(s), as received. */
  header: string | string[] | undefined;
  /** The request's method (htm). */
  method: string;
  /** The request's URL as the client addressed it: PUBLIC_URL + the path (htu; query ignored). */
  url: string;
  /** At a protected resource: the access token, whose hash the proof's `ath` must be (§4.3 ¶11). */
  accessToken?: string;
  /** The service key ring (server nonces), loaded only for a proof that carries or needs a nonce. */
  ring: () => Promise<KeyRing>;
  /** A proof without a valid server nonce is refused (use_dpop_nonce). */
  requireNonce: boolean;
  now?: Date;
}

/** base64url(SHA-256(token)): the `ath` claim (§4.2). */
const accessTokenHash = (token: string): string => createHash('sha256').update(token).digest('base64url');

/** The current server nonce (§8): an HMAC of the time step, so every instance issues and accepts it. */
function dpopNonce(ring: KeyRing, now = new Date()): string {
  return signWithRing(ring, 'dpop-nonce', String(Math.floor(now.getTime() / 1000 / NONCE_STEP_SECONDS)));
}

function nonceIsValid(ring: KeyRing, nonce: string, now: Date): boolean {
  const step = Math.floor(now.getTime() / 1000 / NONCE_STEP_SECONDS);
  let ok = false;
  for (let s = step - NONCE_STEPS + 1; s <= step + 1; s++)
    if (verifyWithRing(ring, 'dpop-nonce', String(s), nonce)) ok = true;
  return ok;
}

/** §4.3 ¶9: htu equals the request's URL, without query and fragment, after URL normalisation. */
function sameTarget(htu: unknown, expected: string): boolean {
  if (typeof htu !== 'string') return false;
  try {
    const actual = new URL(htu);
    const want = new URL(expected);
    for (const u of [actual, want]) {
      u.search = '';
      u.hash = '';
    }
    return actual.href === want.href;
  } catch {
    return false;
  }
}

type JOSEError = InstanceType<typeof errors.JOSEError>;

/** Why jose refused a proof, in stable words (its own messages change between versions). */
function joseRefusal(err: JOSEError): string {
  if (err instanceof errors.JOSEAlgNotAllowed) return 'DPoP proof alg not allowed';
  if (err instanceof errors.JWSSignatureVerificationFailed) return 'DPoP proof signature invalid';
  if (err instanceof errors.JWTClaimValidationFailed)
    return err.claim === 'typ' ? 'DPoP proof typ must be dpop+jwt' : `DPoP proof ${err.claim} claim invalid`;
  // EmbeddedJWK (§4.3 ¶6): the key must be a public key; jose says so only in words.
  if (err instanceof errors.JWSInvalid && /must be a public key/.test(err.message))
    return 'DPoP proof jwk must be a public key';
  return 'malformed DPoP proof';
}

/**
 * Check the request's DPoP proof (§4.3); undefined when it carries none. Throws DpopProofError;
 * records nothing (the caller consumes the jti once everything else has passed: consumeDpopProof).
 */
export async function verifyDpopProof(input: DpopRequest): Promise<DpopProof | undefined> {
  const { header } = input;
  if (header === undefined) return undefined;
  const now = input.now ?? new Date();
  const refuse = (description: string): never => {
    throw new DpopProofError('invalid_dpop_proof', description);
  };
  // §4.3 ¶1: exactly one DPoP header (Node joins repeated ones with ", "; a JWS holds no comma).
  if (Array.isArray(header) || header.includes(',')) refuse('more than one DPoP proof');
  const proof = header as string;
  if (proof === '' || proof.length > MAX_PROOF_LENGTH) refuse('malformed DPoP proof');
  let payload: JWTPayload;
  let jwk: NonNullable<Awaited<ReturnType<typeof jwtVerify>>['protectedHeader']['jwk']>;
  try {
    const verified = await jwtVerify(proof, EmbeddedJWK, {
      typ: 'dpop+jwt',
      algorithms: [...DPOP_SIGNING_ALGS],
      requiredClaims: ['jti', 'htm', 'htu', 'iat'],
      currentDate: now,
    });
    payload = verified.payload;
    jwk = verified.protectedHeader.jwk as typeof jwk;
  } catch (err) {
    return refuse(joseRefusal(err as JOSEError));
  }
  if (typeof payload.jti !== 'string' || payload.jti === '' || payload.jti.length > MAX_JTI_LENGTH)
    refuse('DPoP proof jti must be a non-empty string');
  if (typeof payload.iat !== 'number' || Math.abs(now.getTime() / 1000 - payload.iat) > DPOP_PROOF_WINDOW_SECONDS)
    refuse('DPoP proof iat is not recent enough');
  if (payload.htm !== input.method) refuse('DPoP proof htm mismatch');
  if (!sameTarget(payload.htu, input.url)) refuse('DPoP proof htu mismatch');
  if (input.accessToken !== undefined && payload.ath !== accessTokenHash(input.accessToken))
    refuse('DPoP proof ath mismatch');
  const { nonce } = payload;
  if (nonce !== undefined && typeof nonce !== 'string') refuse('DPoP proof nonce must be a string');
  if (nonce !== undefined || input.requireNonce) {
    const ring = await input.ring();
    if (nonce === undefined || !nonceIsValid(ring, nonce as string, now)) {
      throw new DpopProofError(
        'use_dpop_nonce',
        nonce === undefined ? 'nonce is required in the DPoP proof' : 'invalid nonce in DPoP proof',
        dpopNonce(ring, now),
      );
    }
  }
  return { jkt: await calculateJwkThumbprint(jwk), jti: payload.jti as string, iat: payload.iat as number };
}

/**
 * §11.1: accept a proof's jti once. The insert is the check (primary key), so of concurrent uses on
 * any number of instances exactly one succeeds. Kept until the proof's iat window has passed;
 * an expired entry left for the retention job is taken over. False: a replay.
 */
export async function consumeDpopProof(db: DbOrTrx, proof: DpopProof): Promise<boolean> {
  const expiresAt = new Date((proof.iat + DPOP_PROOF_WINDOW_SECONDS + 1) * 1000);
  const { rows } = await sql<{ digest: string }>`
    insert into dpop_proofs (digest, expires_at) values (${sha256Hex(`${proof.jkt}:${proof.jti}`)}, ${expiresAt})
    on conflict (digest) do update set expires_at = excluded.expires_at where dpop_proofs.expires_at < now()
    returning digest
  `.execute(db);
  return rows.length === 1;
}

/** A replayed proof: the error both kinds of endpoint answer. */
export const replayedProof = () => new DpopProofError('invalid_dpop_proof', 'DPoP proof replayed');

/** The `WWW-Authenticate` challenge of a protected resource (§7.1), with the algorithms it accepts. */
export function dpopChallenge(error?: string, description?: string): string {
  const parts = [];
  if (error) parts.push(`error="${error}"`);
  if (description) parts.push(`error_description="${description.replace(/["\\]/g, '')}"`);
  parts.push(`algs="${DPOP_SIGNING_ALGS.join(' ')}"`);
  return `DPoP ${parts.join(', ')}`;
}

/** Forget a consumed jti whose request was refused after all (the token endpoint: nothing written on a refusal). */
export async function releaseDpopProof(db: DbOrTrx, proof: DpopProof): Promise<void> {
  await db
    .deleteFrom('dpop_proofs')
    .where('digest', '=', sha256Hex(`${proof.jkt}:${proof.jti}`))
    .execute();
}

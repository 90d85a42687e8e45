// OpenID Connect signing keys (RS256, RSA 2048): the key document, its rotation, the published
// JWKS and the signing of ID tokens. The document is kept outside the database — a 0600 file
// locally, a Secrets Manager secret when deployed — and read through a SigningKeySource.
// All JOSE work is done by `jose`; nothing here builds a JWS or a JWK by hand.
import { calculateJwkThumbprint, type CryptoKey, exportJWK, generateKeyPair, importJWK, type JWK, SignJWT } from 'jose';

export const SIGNING_ALG = 'RS256';
const MODULUS_BITS = 2048;

/**
 * {"keys":[{kid, private_jwk, created_at, retired_at, activates_at?}]}: the newest unretired key
 * whose `activates_at` has come signs. A key with `activates_at` in the future is staged: published
 * in the JWKS before it signs anything, so a client's cached JWKS already holds it (issue 22).
 */
export interface SigningKeyDocument {
  keys: Array<{
    kid: string;
    private_jwk: JWK;
    created_at: string;
    retired_at: string | null;
    activates_at?: string | null;
  }>;
}
type DocumentKey = SigningKeyDocument['keys'][number];

/** How long a JWKS response may be cached (Cache-Control max-age): short, so a staged key is seen. */
export const JWKS_MAX_AGE_SECONDS = 3600;

/** A staged key's default wait: every cache of the JWKS has refetched, every instance has reloaded. */
export const defaultActivateAfterSeconds = (policy: SigningKeyPolicy) => JWKS_MAX_AGE_SECONDS + policy.cacheSeconds;

const activation = (k: DocumentKey) => Date.parse(k.activates_at ?? k.created_at);
const isStaged = (k: DocumentKey, now: number) =>
  k.retired_at === null && typeof k.activates_at === 'string' && Date.parse(k.activates_at) > now;

/** The key that signs at `now`: the newest unretired one that has activated. */
function signingKeyOf(keys: DocumentKey[], now: number): DocumentKey | undefined {
  return keys
    .filter((k) => k.retired_at === null && !isStaged(k, now))
    .sort((a, b) => activation(b) - activation(a) || Date.parse(b.created_at) - Date.parse(a.created_at))[0];
}

/** When a key stopped signing: its retired_at, or (superseded by a staged key that activated) that activation. */
const retiredAt = (k: DocumentKey, signing: DocumentKey): number =>
  k.retired_at !== null ? Date.parse(k.retired_at) : activation(signing);

/**
 * How long a retired key stays published: until every ID token it signed has expired. A token
 * signed at t ≤ retired_at by an instance that had not yet reloaded the document (up to
 * `cacheSeconds` after the rotation) expires by retired_at + cacheSeconds + idTokenLifetimeSeconds.
 */
export interface SigningKeyPolicy {
  idTokenLifetimeSeconds: number;
  cacheSeconds: number;
}

/** RFC 7517 §4 public key as published at the jwks_uri. */
export interface PublicJwk {
  kty: 'RSA';
  kid: string;
  e: string;
  n: string;
  use: 'sig';
  alg: typeof SIGNING_ALG;
}

export interface SigningKeySet {
  kid: string;
  privateKey: CryptoKey;
  /** The signing key first, then a staged key, then every retired key whose ID tokens may still be unexpired. */
  jwks: PublicJwk[];
}

export interface SigningKeySource {
  load(): Promise<SigningKeySet>;
}

const retentionMs = (p: SigningKeyPolicy) => (p.idTokenLifetimeSeconds + p.cacheSeconds) * 1000;

/** A fresh RSA key; its kid is the RFC 7638 thumbprint of the public key (stable, not secret). */
async function newKey(now: Date): Promise<SigningKeyDocument['keys'][number]> {
  const { privateKey } = await generateKeyPair(SIGNING_ALG, { modulusLength: MODULUS_BITS, extractable: true });
  const jwk = await exportJWK(privateKey);
  const kid = await calculateJwkThumbprint({ kty: 'RSA', e: jwk.e!, n: jwk.n! });
  return { kid, private_jwk: jwk, created_at: now.toISOString(), retired_at: null };
}

function readDocument(text: string): SigningKeyDocument {
  let doc: SigningKeyDocument;
  try {
    doc = JSON.parse(text);
  } catch {
    throw new Error('the signing key document is not valid JSON');
  }
  if (!doc || !Array.isArray(doc.keys)) throw new Error('the signing key document must be {"keys":[…]}');
  for (const [i, k] of doc.keys.entries()) {
    if (!k || typeof k.kid !== 'string' || k.private_jwk?.kty !== 'RSA' || typeof k.private_jwk.d !== 'string')
      throw new Error(`signing key #${i} is not an RSA private JWK with a kid`);
    if (
      Number.isNaN(new Date(k.created_at).getTime()) ||
      (k.retired_at && Number.isNaN(new Date(k.retired_at).getTime())) ||
      (k.activates_at && Number.isNaN(new Date(k.activates_at).getTime()))
    )
      throw new Error(`signing key #${i} has an invalid date`);
  }
  return doc;
}

export interface SigningKeyRotation {
  document: string;
  kid: string;
  /** staged: published now, signs from `activatesAt`; activated: signs from now. */
  step: 'staged' | 'activated';
  activatesAt: string;
}

/**
 * Rotate (pure: the caller stores the result), in two steps so the JWKS publishes a key before it
 * signs: with no key staged, a new key is staged to sign `activateAfterSeconds` from now (0: at
 * once); with one staged, it signs from now. Either way the keys that stop signing are retired,
 * and retired keys past their retention are dropped. No document yet: the first key, at once.
 */
export async function rotateSigningKeyDocument(
  text: string | undefined,
  policy: SigningKeyPolicy,
  now = new Date(),
  activateAfterSeconds = 0,
): Promise<SigningKeyRotation> {
  const at = now.getTime();
  const previous = text ? readDocument(text).keys : [];
  const current = signingKeyOf(previous, at);
  const staged = previous.find((k) => isStaged(k, at));
  let next: DocumentKey;
  let keys: DocumentKey[];
  if (staged) {
    next = { ...staged, activates_at: now.toISOString() };
    keys = [next, ...previous.filter((k) => k !== staged)];
  } else {
    const delay = current ? activateAfterSeconds : 0;
    next = { ...(await newKey(now)), activates_at: new Date(at + delay * 1000).toISOString() };
    keys = [next, ...previous];
  }
  const signingFrom = Date.parse(next.activates_at!);
  const stillSigning = signingFrom > at ? current : undefined;
  const keep = keys
    .map((k) => {
      if (k === next || k === stillSigning || k.retired_at !== null) return k;
      // Superseded: by an earlier staged key that activated, or by the one activating now.
      const superseded = current && k !== current ? retiredAt(k, current) : at;
      return { ...k, retired_at: new Date(Math.min(superseded, at)).toISOString() };
    })
    .filter((k) => k.retired_at === null || Date.parse(k.retired_at) + retentionMs(policy) > at);
  return {
    document: JSON.stringify({ keys: keep } satisfies SigningKeyDocument),
    kid: next.kid,
    step: signingFrom > at ? 'staged' : 'activated',
    activatesAt: next.activates_at!,
  };
}

const publicJwk = (jwk: JWK, kid: string): PublicJwk => ({
  kty: 'RSA',
  kid,
  e: jwk.e!,
  n: jwk.n!,
  use: 'sig',
  alg: SIGNING_ALG,
});

/** The signing key and the published set at `now`; throws when no key can sign. */
export async function parseSigningKeyDocument(
  text: string,
  policy: SigningKeyPolicy,
  now = new Date(),
): Promise<SigningKeySet> {
  const { keys } = readDocument(text);
  const at = now.getTime();
  const signing = signingKeyOf(keys, at);
  if (!signing) throw new Error('the signing key document has no active key');
  const staged = keys.filter((k) => isStaged(k, at));
  const retired = keys.filter(
    (k) => k !== signing && !isStaged(k, at) && retiredAt(k, signing) + retentionMs(policy) > at,
  );
  const privateKey = (await importJWK({ ...signing.private_jwk, alg: SIGNING_ALG }, SIGNING_ALG)) as CryptoKey;
  return {
    kid: signing.kid,
    privateKey,
    jwks: [signing, ...staged, ...retired].map((k) => publicJwk(k.private_jwk, k.kid)),
  };
}

/**
 * A source over a document fetched by the caller (file or secret). The parsed key is reused while
 * the document text is unchanged; the published set is recomputed on each load, so a retired key
 * drops out on time even when nothing else changes.
 */
export function documentSigningKeySource(
  fetchDocument: () => Promise<string>,
  policy: SigningKeyPolicy,
): SigningKeySource {
  let cached: { text: string; set: Promise<SigningKeySet>; parsedAt: number } | undefined;
  return {
    async load() {
      const text = await fetchDocument();
      const now = Date.now();
      // Re-parse on change, and at least every second so the published set follows the clock.
      if (!cached || cached.text !== text || now - cached.parsedAt >= 1000) {
        const set = parseSigningKeyDocument(text, policy, new Date(now));
        cached = { text, set, parsedAt: now };
        set.catch(() => {
          if (cached?.set === set) cached = undefined;
        });
      }
      return cached.set;
    },
  };
}

/**
 * Sign a JWT (OIDC Core §2: the ID token) with the current key; the header names the kid. `typ`:
 * a logout token's is `logout+jwt` (Back-Channel Logout 1.0 §2.4), so it cannot pass for an ID token.
 */
export async function signJwt(keys: SigningKeySet, claims: Record<string, unknown>, typ = 'JWT'): Promise<string> {
  return new SignJWT(claims).setProtectedHeader({ alg: SIGNING_ALG, kid: keys.kid, typ }).sign(keys.privateKey);
}

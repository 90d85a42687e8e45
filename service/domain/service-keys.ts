// The service key ring: it signs session, CSRF and pending-TOTP cookies and seals TOTP seeds. The
// newest key signs; every key that has not aged out still verifies, so a rotation signs nobody out.
// Kept outside the database as a JSON document: a 0600 file under LANYARD_HOME locally
// (local/service-key-file.ts), a Secrets Manager secret deployed (aws/session-key-ring.ts).
import { createHmac, randomBytes } from 'node:crypto';
import { sql } from 'kysely';
import type { Db, DbOrTrx } from '../db/schema';
import { withTransaction } from '../db/transaction';
import { recordAudit } from './audit';
import { safeEqual } from './secrets';
import { resealTotpSecrets } from './totp-secrets';

/**
 * How long a retired key keeps verifying: longer than the longest web session (7 days), so a
 * session signed just before a rotation lives out its life.
 */
export const RETIRED_KEY_VERIFY_SECONDS = 8 * 24 * 3600;

export interface ServiceKey {
  id: string;
  /** 256-bit HMAC key. */
  secret: Buffer;
  createdAt: Date;
  retiredAt: Date | null;
}

export interface KeyRing {
  /** The key that signs: the newest unretired one. */
  signing: ServiceKey;
  /** Every key that still verifies, the signing key first. */
  verifying: ServiceKey[];
}

/** Where the ring comes from: the database (local, default) or an external store (Secrets Manager). */
export interface KeyRingSource {
  load(): Promise<KeyRing>;
}

const newSecret = (): string => randomBytes(32).toString('base64url');
const newKeyId = (): string => randomBytes(8).toString('hex');

function decodeSecret(text: string): Buffer {
  const buf = /^[0-9a-f]{64}$/i.test(text) ? Buffer.from(text, 'hex') : Buffer.from(text, 'base64url');
  if (buf.length < 32) throw new Error('a service key must hold at least 256 bits');
  return buf;
}

/** Build a ring from keys in any order; aged-out keys are dropped. Throws when no key can sign. */
export function makeKeyRing(keys: ServiceKey[], now = new Date()): KeyRing {
  const cutoff = now.getTime() - RETIRED_KEY_VERIFY_SECONDS * 1000;
  const live = keys
    .filter((k) => k.retiredAt === null || k.retiredAt.getTime() > cutoff)
    .sort((a, b) => b.createdAt.getTime() - a.createdAt.getTime() || (b.id > a.id ? 1 : -1));
  const signing = live.find((k) => k.retiredAt === null);
  if (!signing) throw new Error('the session key ring has no active key');
  return { signing, verifying: [signing, ...live.filter((k) => k !== signing)] };
}

// ---------------------------------------------------------------------------------------------
// Where the ring document is kept: never in the database (issue 22: a dump holding both the keys
// and what they protect forged the pending-TOTP cookie and opened every TOTP seed). Locally a 0600
// file under LANYARD_HOME (local/service-key-file.ts); deployed a Secrets Manager secret.

export interface KeyRingDocumentStore {
  /** The document, undefined when there is none yet. */
  read(): Promise<string | undefined>;
  /** Replace the document (atomically: a reader sees the old one or the new one). */
  write(document: string): Promise<void>;
}

export interface RotationResult {
  rotated: true;
  /** The id of the new signing key (not secret). */
  keyId: string;
  /** TOTP secrets re-encrypted under the new key. */
  resealedTotpSecrets: number;
}

/**
 * `secrets rotate session-key`: a new key signs from now on; the previous keys keep verifying
 * for RETIRED_KEY_VERIFY_SECONDS, so nobody is signed out, and aged-out keys are dropped. TOTP
 * secrets follow the signing key, so no secret depends on a key that will age out.
 */
export async function rotateSessionKey(
  db: DbOrTrx,
  store: KeyRingDocumentStore,
  actor = 'system',
): Promise<RotationResult> {
  const { document, keyId } = rotateKeyRingDocument(await store.read());
  await store.write(document);
  const resealed = await resealTotpSecrets(db, parseKeyRingDocument(document));
  await recordAudit(db, {
    actor,
    action: 'service_key.rotate',
    targetType: 'service_key',
    targetId: keyId,
    details: { purpose: 'session', resealed_totp_secrets: resealed },
  });
  return { rotated: true, keyId, resealedTotpSecrets: resealed };
}

export interface MovedKeys {
  /** Keys taken out of the database's service_keys table. */
  moved: number;
  /** TOTP secrets sealed again under the store's signing key. */
  resealedTotpSecrets: number;
}

/**
 * Before migration 0012 a local installation kept its ring in the `service_keys` table. Move those
 * keys into `store` (they keep verifying sessions and opening seeds: nobody is signed out, no
 * account is lost) and retire them there in favour of a new key that has never been in the
 * database; then seal every TOTP seed under the new key and delete the keys from the table, in one
 * transaction. Safe to run again after a crash at any point (keys are merged by id, the document is
 * written before the rows go). Nothing to do once the table is gone (0012 drops it).
 */
export async function moveDatabaseServiceKeys(
  db: Db,
  store: KeyRingDocumentStore,
  now = new Date(),
): Promise<MovedKeys> {
  const table = await sql<{
    present: boolean;
  }>`select to_regclass('public.service_keys') is not null as present`.execute(db);
  if (!table.rows[0]?.present) return { moved: 0, resealedTotpSecrets: 0 };
  const { rows } = await sql<{ id: string; secret: string; created_at: Date; retired_at: Date | null }>`
    select id::text as id, secret, created_at, retired_at from service_keys where purpose = 'session' order by id
  `.execute(db);
  if (!rows.length) return { moved: 0, resealedTotpSecrets: 0 };
  const text = await store.read();
  const doc: KeyRingDocument = text ? JSON.parse(text) : { keys: [] };
  const known = new Set(doc.keys.map((k) => k.id));
  for (const r of rows) {
    if (known.has(r.id)) continue;
    // A key that was in the database only verifies from now on.
    doc.keys.push({
      id: r.id,
      secret: r.secret,
      created_at: r.created_at.toISOString(),
      retired_at: (r.retired_at ?? now).toISOString(),
    });
  }
  if (!doc.keys.some((k) => k.retired_at === null)) {
    doc.keys.unshift({ id: newKeyId(), secret: newSecret(), created_at: now.toISOString(), retired_at: null });
  }
  const document = JSON.stringify(doc);
  await store.write(document);
  const ring = parseKeyRingDocument(document, now);
  return withTransaction(db, async (trx) => {
    const resealed = await resealTotpSecrets(trx, ring);
    await sql`delete from service_keys where purpose = 'session'`.execute(trx);
    await recordAudit(trx, {
      actor: 'system',
      action: 'service_key.move_out_of_database',
      targetType: 'service_key',
      targetId: ring.signing.id,
      details: { moved: rows.length, resealed_totp_secrets: resealed },
    });
    return { moved: rows.length, resealedTotpSecrets: resealed };
  });
}

// ---------------------------------------------------------------------------------------------
// An externally kept ring (e.g. a Secrets Manager secret) as a JSON document:
// {"keys":[{"id":"…","secret":"<base64url or hex, ≥256 bits>","created_at":"ISO","retired_at":null}]}

export interface KeyRingDocument {
  keys: Array<{ id: string; secret: string; created_at: string; retired_at: string | null }>;
}

export function parseKeyRingDocument(text: string, now = new Date()): KeyRing {
  let doc: KeyRingDocument;
  try {
    doc = JSON.parse(text);
  } catch {
    throw new Error('the session key ring is not valid JSON');
  }
  if (!doc || !Array.isArray(doc.keys)) throw new Error('the session key ring must be {"keys":[…]}');
  const keys = doc.keys.map((k, i) => {
    if (!k || typeof k.secret !== 'string') throw new Error(`session key #${i} has no secret`);
    const createdAt = new Date(k.created_at ?? 0);
    const retiredAt = k.retired_at ? new Date(k.retired_at) : null;
    if (Number.isNaN(createdAt.getTime()) || (retiredAt && Number.isNaN(retiredAt.getTime()))) {
      throw new Error(`session key #${i} has an invalid date`);
    }
    return { id: String(k.id ?? i), secret: decodeSecret(k.secret), createdAt, retiredAt };
  });
  return makeKeyRing(keys, now);
}

/**
 * Rotate an external ring document (pure: the caller stores the result): a new signing key,
 * the previous ones retired, the aged-out ones dropped. An empty/missing document starts a ring.
 */
export function rotateKeyRingDocument(text: string | undefined, now = new Date()): { document: string; keyId: string } {
  const doc: KeyRingDocument = text ? JSON.parse(text) : { keys: [] };
  const cutoff = now.getTime() - RETIRED_KEY_VERIFY_SECONDS * 1000;
  const keep = (doc.keys ?? [])
    .map((k) => ({ ...k, retired_at: k.retired_at ?? now.toISOString() }))
    .filter((k) => new Date(k.retired_at).getTime() > cutoff);
  const keyId = newKeyId();
  const next: KeyRingDocument = {
    keys: [{ id: keyId, secret: newSecret(), created_at: now.toISOString(), retired_at: null }, ...keep],
  };
  return { document: JSON.stringify(next), keyId };
}

/** A source over a document fetched by the caller (the infra layer reads Secrets Manager). */
export const documentKeyRingSource = (fetchDocument: () => Promise<string>): KeyRingSource => ({
  load: async () => parseKeyRingDocument(await fetchDocument()),
});

/**
 * Cache a source for `ttlMs` (one load per instance per minute, not per request). `refresh()`
 * forces a reload: call it when a value fails to verify, so a key rotated on another instance
 * is picked up at once (rate-limited to one reload per `minRefreshMs`).
 */
export function cachedKeyRingSource(source: KeyRingSource, ttlMs = 60_000, minRefreshMs = 5_000) {
  let current: Promise<KeyRing> | undefined;
  let loadedAt = 0;
  const reload = () => {
    loadedAt = Date.now();
    const p = source.load();
    current = p;
    p.catch(() => {
      if (current === p) current = undefined; // a failed load is retried by the next call
    });
    return p;
  };
  return {
    load(): Promise<KeyRing> {
      if (!current || Date.now() - loadedAt > ttlMs) return reload();
      return current;
    },
    /** Reload unless a load happened in the last `minRefreshMs`; returns the (possibly new) ring. */
    refresh(): Promise<KeyRing> {
      if (current && Date.now() - loadedAt < minRefreshMs) return current;
      return reload();
    },
    /** Reload now, whatever the rate limit: for key ids read from our own database, not a request. */
    reload,
  };
}

// ---------------------------------------------------------------------------------------------
// Signing with the ring

/** HMAC-SHA256 of `purpose` and `value` under the signing key, base64url. */
export function signWithRing(ring: KeyRing, purpose: string, value: string): string {
  return mac(ring.signing.secret, purpose, value);
}

/** Does `signature` match `value` under any key of the ring? Constant time per key. */
export function verifyWithRing(ring: KeyRing, purpose: string, value: string, signature: string): boolean {
  let ok = false;
  for (const key of ring.verifying) if (safeEqual(mac(key.secret, purpose, value), signature)) ok = true;
  return ok;
}

const mac = (secret: Buffer, purpose: string, value: string): string =>
  createHmac('sha256', secret).update(`${purpose}\0${value}`, 'utf8').digest('base64url');

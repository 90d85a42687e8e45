// The session/CSRF signing key ring. The newest key signs; every key that has not aged out still
// verifies, so a rotation signs nobody out. Kept in `service_keys` locally, or supplied from
// outside (Secrets Manager when deployed) through a KeyRingSource over the same JSON document.
import { withTransaction } from '../db/transaction';
import { createHmac, randomBytes } from 'node:crypto';
import { sql } from 'kysely';
import type { DbOrTrx } from '../db/schema';
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
// The database ring (service_keys)

async function selectKeys(db: DbOrTrx): Promise<ServiceKey[]> {
  const cutoff = new Date(Date.now() - RETIRED_KEY_VERIFY_SECONDS * 1000);
  const rows = await db
    .selectFrom('service_keys')
    .select(['id', 'secret', 'created_at', 'retired_at'])
    .where('purpose', '=', 'session')
    .where((eb) => eb.or([eb('retired_at', 'is', null), eb('retired_at', '>', cutoff)]))
    .orderBy('id', 'desc')
    .execute();
  return rows.map((r) => ({
    id: String(r.id),
    secret: decodeSecret(r.secret),
    createdAt: r.created_at,
    retiredAt: r.retired_at,
  }));
}

/** The ring from `service_keys`; the first call on an empty table creates the first key. */
export async function loadSessionKeyRing(db: DbOrTrx): Promise<KeyRing> {
  const keys = await selectKeys(db);
  if (keys.some((k) => k.retiredAt === null)) return makeKeyRing(keys);
  return withTransaction(db, async (trx) => {
    // Two instances starting at once on an empty table: one creates the key, the other reads it.
    await sql`select pg_advisory_xact_lock(hashtext('lanyard.service_keys'))`.execute(trx);
    const again = await selectKeys(trx);
    if (again.some((k) => k.retiredAt === null)) return makeKeyRing(again);
    await trx.insertInto('service_keys').values({ purpose: 'session', secret: newSecret() }).execute();
    return makeKeyRing(await selectKeys(trx));
  });
}

export interface RotationResult {
  rotated: true;
  /** The id of the new signing key (not secret). */
  keyId: string;
  /** Keys that now only verify. */
  retired: number;
  /** Aged-out keys removed. */
  removed: number;
  /** TOTP secrets re-encrypted under the new key. */
  resealedTotpSecrets: number;
}

/**
 * `secrets rotate session-key`: a new key signs from now on; the previous keys keep verifying
 * for RETIRED_KEY_VERIFY_SECONDS, so nobody is signed out. Aged-out keys are deleted.
 */
export async function rotateSessionKey(db: DbOrTrx, actor = 'system'): Promise<RotationResult> {
  const run = async (trx: DbOrTrx): Promise<RotationResult> => {
    await sql`select pg_advisory_xact_lock(hashtext('lanyard.service_keys'))`.execute(trx);
    const now = new Date();
    const retired = await trx
      .updateTable('service_keys')
      .set({ retired_at: now })
      .where('purpose', '=', 'session')
      .where('retired_at', 'is', null)
      .executeTakeFirst();
    const removed = await trx
      .deleteFrom('service_keys')
      .where('purpose', '=', 'session')
      .where('retired_at', '<=', new Date(now.getTime() - RETIRED_KEY_VERIFY_SECONDS * 1000))
      .executeTakeFirst();
    const key = await trx
      .insertInto('service_keys')
      .values({ purpose: 'session', secret: newSecret(), created_at: now })
      .returning('id')
      .executeTakeFirstOrThrow();
    // TOTP secrets follow the signing key, so no secret depends on a key that will age out.
    const resealed = await resealTotpSecrets(trx, makeKeyRing(await selectKeys(trx)));
    const result: RotationResult = {
      resealedTotpSecrets: resealed,
      rotated: true,
      keyId: String(key.id),
      retired: Number(retired.numUpdatedRows),
      removed: Number(removed.numDeletedRows),
    };
    await recordAudit(trx, {
      actor,
      action: 'service_key.rotate',
      targetType: 'service_key',
      targetId: result.keyId,
      details: { purpose: 'session', retired: result.retired, resealed_totp_secrets: resealed },
    });
    return result;
  };
  return withTransaction(db, run);
}

export const dbKeyRingSource = (db: DbOrTrx): KeyRingSource => ({ load: () => loadSessionKeyRing(db) });

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
  const keyId = randomBytes(8).toString('hex');
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

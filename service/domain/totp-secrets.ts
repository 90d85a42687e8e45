// TOTP secrets at rest: AES-256-GCM under a key derived (HKDF-SHA256) from a service key ring key,
// the key's id stored with the ciphertext and the user id bound as associated data (a ciphertext
// copied onto another user does not open). Stored as `totp1.<key id>.<iv>.<ciphertext+tag>`
// (base64url). A secret in clear (enrolled before encryption) is still read, and sealed under the
// signing key on its next use; rotation re-seals every secret under the new key.
import { createCipheriv, createDecipheriv, hkdfSync, randomBytes } from 'node:crypto';
import type { DbOrTrx } from '../db/schema';
import type { KeyRing, ServiceKey } from './service-keys';

const PREFIX = 'totp1';
const INFO = 'lanyard totp-secret v1';
const SEALED = /^totp1\.([0-9A-Za-z_-]{1,64})\.([A-Za-z0-9_-]{16})\.([A-Za-z0-9_-]{22,})$/;

const aesKey = (key: ServiceKey): Buffer => Buffer.from(hkdfSync('sha256', key.secret, Buffer.alloc(0), INFO, 32));
const aad = (userId: number) => Buffer.from(`lanyard totp user:${userId}`);

export const isSealed = (stored: string): boolean => stored.startsWith(`${PREFIX}.`);

/** Seal a base32 TOTP secret for `userId` under the ring's signing key. */
export function sealTotpSecret(ring: KeyRing, userId: number, secret: string): string {
  const iv = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', aesKey(ring.signing), iv);
  cipher.setAAD(aad(userId));
  const body = Buffer.concat([cipher.update(secret, 'utf8'), cipher.final(), cipher.getAuthTag()]);
  return `${PREFIX}.${ring.signing.id}.${iv.toString('base64url')}.${body.toString('base64url')}`;
}

export class UnknownTotpKeyError extends Error {
  constructor(readonly keyId: string) {
    super(`the TOTP secret is sealed under key ${keyId}, which the key ring does not hold`);
  }
}

export interface OpenedTotpSecret {
  secret: string;
  /** In clear, or under a key other than the signing key: re-seal it. */
  stale: boolean;
}

/** Open a stored TOTP secret (sealed or, from before encryption, in clear). */
export function openTotpSecret(ring: KeyRing, userId: number, stored: string): OpenedTotpSecret {
  if (!isSealed(stored)) return { secret: stored, stale: true };
  const m = SEALED.exec(stored);
  if (!m) throw new Error('a sealed TOTP secret is malformed');
  const [, keyId, iv, body] = m;
  const key = ring.verifying.find((k) => k.id === keyId);
  if (!key) throw new UnknownTotpKeyError(keyId);
  const data = Buffer.from(body, 'base64url');
  const decipher = createDecipheriv('aes-256-gcm', aesKey(key), Buffer.from(iv, 'base64url'));
  decipher.setAAD(aad(userId));
  decipher.setAuthTag(data.subarray(data.length - 16));
  const secret = Buffer.concat([decipher.update(data.subarray(0, data.length - 16)), decipher.final()]).toString(
    'utf8',
  );
  return { secret, stale: keyId !== ring.signing.id };
}

/**
 * Re-seal every TOTP secret that is in clear or under an older key with the ring's signing key
 * (key rotation; the deploy's data pass; `npm start`). Returns how many rows changed. A secret
 * under a key the ring no longer holds is left alone (it cannot be opened; the user re-enrols).
 */
export async function resealTotpSecrets(db: DbOrTrx, ring: KeyRing): Promise<number> {
  const rows = await db
    .selectFrom('users')
    .select(['id', 'otp_secret'])
    .where('otp_secret', 'is not', null)
    .where('otp_secret', 'not like', `${PREFIX}.${ring.signing.id}.%`)
    .execute();
  let changed = 0;
  for (const row of rows) {
    let opened: OpenedTotpSecret;
    try {
      opened = openTotpSecret(ring, row.id, row.otp_secret!);
    } catch {
      continue;
    }
    const result = await db
      .updateTable('users')
      .set({ otp_secret: sealTotpSecret(ring, row.id, opened.secret) })
      .where('id', '=', row.id)
      .where('otp_secret', '=', row.otp_secret) // a concurrent re-enrolment wins
      .executeTakeFirst();
    changed += Number(result.numUpdatedRows);
  }
  return changed;
}

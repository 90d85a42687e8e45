// Encrypt the TOTP secrets stored in clear (issue 11). Frozen in time: the crypto is written out
// here, not imported, and must produce what the app reads (domain/totp-secrets.ts, format
// `totp1.<key id>.<iv>.<ciphertext+tag>`, AES-256-GCM, key = HKDF-SHA256(service key, "",
// "lanyard totp-secret v1"), associated data "lanyard totp user:<id>").
//
// Where the key comes from: locally the service key ring is the service_keys table, so the
// newest active 'session' key there seals every secret in this same transaction. A deployed
// stack keeps its ring in Secrets Manager and nothing in service_keys: there this migration
// changes nothing, and the migration function's data pass right after the migrations seals the
// secrets with the Secrets Manager ring (service/lambda-migrate.ts), as `npm start` does for a
// local database that has no key yet. A secret still in clear is sealed on its next use as well.
import { createCipheriv, createDecipheriv, hkdfSync, randomBytes } from 'node:crypto';
import { type Kysely, sql } from 'kysely';

const INFO = 'lanyard totp-secret v1';

function decodeSecret(text: string): Buffer {
  return /^[0-9a-f]{64}$/i.test(text) ? Buffer.from(text, 'hex') : Buffer.from(text, 'base64url');
}

const aesKey = (secret: Buffer) => Buffer.from(hkdfSync('sha256', secret, Buffer.alloc(0), INFO, 32));
const aad = (userId: number | string) => Buffer.from(`lanyard totp user:${userId}`);

export async function up(db: Kysely<any>): Promise<void> {
  const { rows: keys } = await sql<{ id: string; secret: string }>`
    select id::text as id, secret from service_keys
    where purpose = 'session' and retired_at is null
    order by created_at desc, id desc limit 1
  `.execute(db);
  if (!keys.length) return;
  const key = aesKey(decodeSecret(keys[0].secret));
  const { rows } = await sql<{ id: string; otp_secret: string }>`
    select id::text as id, otp_secret from users where otp_secret is not null and otp_secret not like 'totp1.%'
  `.execute(db);
  for (const row of rows) {
    const iv = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', key, iv);
    cipher.setAAD(aad(row.id));
    const body = Buffer.concat([cipher.update(row.otp_secret, 'utf8'), cipher.final(), cipher.getAuthTag()]);
    const sealed = `totp1.${keys[0].id}.${iv.toString('base64url')}.${body.toString('base64url')}`;
    await sql`update users set otp_secret = ${sealed} where id = ${row.id}::bigint`.execute(db);
  }
}

/** Back to clear text, for the secrets sealed under a key the service_keys table still holds. */
export async function down(db: Kysely<any>): Promise<void> {
  const { rows: keys } = await sql<{ id: string; secret: string }>`
    select id::text as id, secret from service_keys where purpose = 'session'
  `.execute(db);
  const byId = new Map(keys.map((k) => [k.id, aesKey(decodeSecret(k.secret))]));
  const { rows } = await sql<{ id: string; otp_secret: string }>`
    select id::text as id, otp_secret from users where otp_secret like 'totp1.%'
  `.execute(db);
  for (const row of rows) {
    const [, keyId, iv, body] = row.otp_secret.split('.');
    const key = byId.get(keyId);
    if (!key) continue;
    const data = Buffer.from(body, 'base64url');
    const decipher = createDecipheriv('aes-256-gcm', key, Buffer.from(iv, 'base64url'));
    decipher.setAAD(aad(row.id));
    decipher.setAuthTag(data.subarray(data.length - 16));
    const secret = Buffer.concat([decipher.update(data.subarray(0, data.length - 16)), decipher.final()]).toString();
    await sql`update users set otp_secret = ${secret} where id = ${row.id}::bigint`.execute(db);
  }
}

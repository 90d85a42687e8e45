// Device authorization grants (RFC 8628): the device code (64 hex) and the user code (8 letters,
// shown XXXX-XXXX) are stored as SHA-256 digests; the person's decision; the guess limits of the
// verification page. The polling rules themselves live in oauth/grants/device-code.ts.
import { randomInt } from 'node:crypto';
import { sql } from 'kysely';
import type { DbOrTrx } from '../db/schema';
import { addressLimit, reserveAttempt, settleSuccess, type Throttle } from './rate-limit';
import { randomHex, sha256Hex } from './secrets';

export const DEVICE_CODE_LIFETIME_SECONDS = 300;
export const DEVICE_POLLING_INTERVAL_SECONDS = 5;
/** RFC 8628 §3.5: each slow_down adds 5 seconds to the interval, for this and every later request. */
export const SLOW_DOWN_INCREMENT_SECONDS = 5;

/**
 * RFC 8628 §6.1's base-20 alphabet: consonants only, without the look-alikes (no vowels, so no
 * words; no 0/O, 1/I/L confusion). 8 characters: 20^8 ≈ 2.6·10^10 codes.
 */
const USER_CODE_ALPHABET = 'BCDFGHJKLMNPQRSTVWXZ';
const USER_CODE_LENGTH = 8;

/** Wrong user codes a web session may enter in a minute (the address limit applies as well). */
export const USER_CODE_SESSION_LIMIT = 5;
export const USER_CODE_WINDOW_SECONDS = 60;

/** Upper case, without dashes or spaces: what the person types is compared in this form. */
export function normalizeUserCode(input: string): string | undefined {
  const code = input.toUpperCase().replace(/[\s-]/g, '');
  if (code.length !== USER_CODE_LENGTH || [...code].some((c) => !USER_CODE_ALPHABET.includes(c))) return undefined;
  return code;
}

export const formatUserCode = (code: string): string => `${code.slice(0, 4)}-${code.slice(4)}`;

function newUserCode(): string {
  let code = '';
  for (let i = 0; i < USER_CODE_LENGTH; i++) code += USER_CODE_ALPHABET[randomInt(USER_CODE_ALPHABET.length)];
  return code;
}

export interface NewDeviceGrant {
  deviceCode: string;
  /** Formatted XXXX-XXXX. */
  userCode: string;
  expiresIn: number;
  interval: number;
}

/** RFC 8628 §3.2: a new device authorization for `applicationId` with the (already resolved) scopes. */
export async function createDeviceGrant(
  db: DbOrTrx,
  input: { applicationId: number; scopes: string[]; resources?: string[] },
): Promise<NewDeviceGrant> {
  const deviceCode = randomHex();
  const userCode = newUserCode();
  await db
    .insertInto('oauth_device_grants')
    .values({
      application_id: input.applicationId,
      device_code_digest: sha256Hex(deviceCode),
      user_code_digest: sha256Hex(userCode),
      scopes: input.scopes,
      resources: input.resources ?? [],
      interval_seconds: DEVICE_POLLING_INTERVAL_SECONDS,
      expires_at: sql<Date>`now() + make_interval(secs => ${DEVICE_CODE_LIFETIME_SECONDS})`,
    })
    .execute();
  return {
    deviceCode,
    userCode: formatUserCode(userCode),
    expiresIn: DEVICE_CODE_LIFETIME_SECONDS,
    interval: DEVICE_POLLING_INTERVAL_SECONDS,
  };
}

/** Columns safe to select: never the digests. */
const GRANT_COLUMNS = [
  'id',
  'application_id',
  'scopes',
  'resources',
  'status',
  'user_id',
  'interval_seconds',
  'last_polled_at',
  'auth_time',
  'amr',
  'expires_at',
] as const;

/**
 * Look a device code up and lock its row (FOR UPDATE) for the rest of the caller's transaction:
 * concurrent polls queue here, so of those after approval exactly one sees it approved.
 */
export const lockDeviceGrant = (trx: DbOrTrx, deviceCode: string) =>
  trx
    .selectFrom('oauth_device_grants')
    .select(GRANT_COLUMNS)
    .where('device_code_digest', '=', sha256Hex(deviceCode))
    .forUpdate()
    .executeTakeFirst();

export type DeviceGrantRecord = NonNullable<Awaited<ReturnType<typeof lockDeviceGrant>>>;

/** Record a poll; `slowDown` also widens the interval by SLOW_DOWN_INCREMENT_SECONDS. */
export async function recordDevicePoll(trx: DbOrTrx, id: number, at: Date, slowDown: boolean): Promise<void> {
  await trx
    .updateTable('oauth_device_grants')
    .set({
      last_polled_at: at,
      ...(slowDown ? { interval_seconds: sql<number>`interval_seconds + ${SLOW_DOWN_INCREMENT_SECONDS}` } : {}),
    })
    .where('id', '=', id)
    .execute();
}

export async function markDeviceGrantUsed(trx: DbOrTrx, id: number, at: Date): Promise<void> {
  await trx
    .updateTable('oauth_device_grants')
    .set({ status: 'used', last_polled_at: at })
    .where('id', '=', id)
    .execute();
}

/** The pending grant a user code names (expired ones included: the page says so), or undefined. */
export async function findPendingDeviceGrant(db: DbOrTrx, userCode: string) {
  const code = normalizeUserCode(userCode);
  if (!code) return undefined;
  return db
    .selectFrom('oauth_device_grants')
    .select([...GRANT_COLUMNS, sql<boolean>`expires_at <= now()`.as('expired')])
    .where('user_code_digest', '=', sha256Hex(code))
    .where('status', '=', 'pending')
    .orderBy('id', 'desc')
    .executeTakeFirst();
}

/**
 * The person's decision on a pending, unexpired grant, with how their browser session signed in
 * (the ID token's auth_time and amr). False when it was decided meanwhile or has expired (a
 * conditional update: two decisions racing, one wins).
 */
export async function decideDeviceGrant(
  db: DbOrTrx,
  id: number,
  decision: { userId: number; status: 'approved' | 'denied'; authTime?: Date; amr?: string[] },
): Promise<boolean> {
  const row = await db
    .updateTable('oauth_device_grants')
    .set({
      status: decision.status,
      user_id: decision.userId,
      auth_time: decision.authTime ?? null,
      amr: decision.amr ?? null,
    })
    .where('id', '=', id)
    .where('status', '=', 'pending')
    .where('expires_at', '>', sql<Date>`now()`)
    .returning('id')
    .executeTakeFirst();
  return row !== undefined;
}

const sessionKey = (sessionId: string) => `failures:user_code:session:${sha256Hex(sessionId)}`;

export type PendingDeviceGrant = NonNullable<Awaited<ReturnType<typeof findPendingDeviceGrant>>>;

/**
 * A user code entered on the verification page, limited to 5 wrong codes a minute per web session
 * and by the address's shared credential-failure limit. The attempt is reserved on both before
 * the code is looked up (rate-limit.ts), so a throttled session learns nothing, right code or
 * wrong, and 50 concurrent guesses are no more than 5; a code that names a grant does not count.
 */
export async function checkUserCode(
  db: DbOrTrx,
  input: { sessionId: string; address: string; userCode: string },
): Promise<{ ok: true; grant: PendingDeviceGrant | undefined } | { ok: false; throttle: Throttle }> {
  const admission = await reserveAttempt(db, [
    { key: sessionKey(input.sessionId), limit: USER_CODE_SESSION_LIMIT, windowSeconds: USER_CODE_WINDOW_SECONDS },
    addressLimit(input.address),
  ]);
  if (!admission.ok) return admission;
  const grant = await findPendingDeviceGrant(db, input.userCode);
  if (grant) await settleSuccess(db, admission.reservation);
  return { ok: true, grant };
}

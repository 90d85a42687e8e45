// Password hashing: argon2id at OWASP's recommended m=19 MiB, t=2, p=1 through @node-rs/argon2
// (a native binding with prebuilt linux-x64 and linux-arm64 binaries; the Lambda bundle carries
// the arm64 one, see infra/build/bundle.ts), stored as a PHC string so the cost can be raised
// later (needsRehash). Hashes made by the first release (scrypt N=2^17) still verify and are
// replaced on the next successful sign-in. Both run on libuv's thread pool, never on the event
// loop; a small semaphore bounds concurrent hashes so a burst of sign-ins cannot starve other requests.
import { randomBytes, scrypt as scryptCb, timingSafeEqual, type ScryptOptions } from 'node:crypto';
import { availableParallelism } from 'node:os';
import { hash as argon2Hash, verify as argon2Verify, type Options as Argon2Options } from '@node-rs/argon2';

export interface PasswordParams {
  /** Memory in KiB. */
  memoryCost: number;
  /** Passes over the memory. */
  timeCost: number;
  parallelism: number;
}

/** OWASP Password Storage Cheat Sheet, argon2id: m=19 MiB (19456 KiB), t=2, p=1. */
export const DEFAULT_PARAMS: PasswordParams = { memoryCost: 19456, timeCost: 2, parallelism: 1 };
const KEY_LENGTH = 32;
// Algorithm.Argon2id in @node-rs/argon2 (a const enum, which isolated modules cannot import).
const ARGON2ID = 2 as Argon2Options['algorithm'];
// As many hashes at once as the machine has cores, and no more: more would only queue on the
// thread pool and hold more memory (19 MiB each). Issue 30 holds the password grant to ≥ 0.8× the
// raw argon2id rate of the same machine at the same concurrency, with GET /user's p99 during
// sign-ins ≤ 2× idle; on 2 cores one hash at a time reached half that rate (85 sign-ins/s, p99
// ×1.3), two reached 115/s at ×1.6 (bench/http.ts). A Lambda instance serves one request at a
// time, so it hashes one at a time anyway.
const MAX_CONCURRENT = Math.max(1, availableParallelism());

let active = 0;
const waiting: Array<() => void> = [];
async function withSlot<T>(fn: () => Promise<T>): Promise<T> {
  if (active >= MAX_CONCURRENT) await new Promise<void>((resolve) => waiting.push(resolve));
  active++;
  try {
    return await fn();
  } finally {
    active--;
    waiting.shift()?.();
  }
}

let testParams: PasswordParams | undefined;
/**
 * Tests may lower the cost (never the service): a seam in the module's own state, so it cannot
 * live in test/.
 * @internal
 */
export function setPasswordParamsForTesting(params: PasswordParams | undefined): void {
  testParams = params;
  dummyHash = undefined;
}
const currentParams = (): PasswordParams => testParams ?? DEFAULT_PARAMS;

/** `$argon2id$v=19$m=19456,t=2,p=1$<salt b64>$<hash b64>` */
export function hashPassword(password: string, params: PasswordParams = currentParams()): Promise<string> {
  return withSlot(() =>
    argon2Hash(password.normalize('NFKC'), {
      algorithm: ARGON2ID,
      memoryCost: params.memoryCost,
      timeCost: params.timeCost,
      parallelism: params.parallelism,
      outputLen: KEY_LENGTH,
      salt: randomBytes(16),
    }),
  );
}

const ARGON2ID_PHC = /^\$argon2id\$v=19\$m=(\d+),t=(\d+),p=(\d+)\$[A-Za-z0-9+/]+\$[A-Za-z0-9+/]+$/;
const SCRYPT_PHC = /^\$scrypt\$ln=(\d+),r=(\d+),p=(\d+)\$([A-Za-z0-9+/]+)\$([A-Za-z0-9+/]+)$/;

function argon2Params(phc: string): PasswordParams | undefined {
  const m = ARGON2ID_PHC.exec(phc);
  return m ? { memoryCost: Number(m[1]), timeCost: Number(m[2]), parallelism: Number(m[3]) } : undefined;
}

/** The first release's scrypt hashes: verified (never made) so their owners can sign in once more. */
function verifyScrypt(password: string, m: RegExpExecArray): Promise<boolean> {
  const [ln, r, p] = [Number(m[1]), Number(m[2]), Number(m[3])];
  const salt = Buffer.from(m[4], 'base64');
  const expected = Buffer.from(m[5], 'base64');
  const N = 2 ** ln;
  const options: ScryptOptions = { N, r, p, maxmem: 128 * N * r * 2 + 1024 * 1024 };
  return withSlot(
    () =>
      new Promise((resolve, reject) =>
        scryptCb(password.normalize('NFKC'), salt, expected.length, options, (err, key) =>
          err ? reject(err) : resolve(key.length === expected.length && timingSafeEqual(key, expected)),
        ),
      ),
  );
}

// A fixed hash to verify against when there is no user, so "no such user" costs one hash too.
let dummyHash: Promise<string> | undefined;

/** Verify a password against a PHC string; a missing or unreadable hash still spends one hash. */
export async function verifyPassword(password: string, phc: string | null | undefined): Promise<boolean> {
  if (phc && argon2Params(phc)) {
    // @node-rs/argon2 compares in constant time.
    return withSlot(() => argon2Verify(phc, password.normalize('NFKC')));
  }
  const scrypt = phc ? SCRYPT_PHC.exec(phc) : null;
  if (scrypt) return verifyScrypt(password, scrypt);
  dummyHash ??= hashPassword('lanyard-dummy-password');
  const dummy = await dummyHash;
  await withSlot(() => argon2Verify(dummy, password.normalize('NFKC')));
  return false;
}

/** True when the stored hash is not argon2id at today's cost or more: rehash on the next sign-in. */
export function needsRehash(phc: string): boolean {
  const have = argon2Params(phc);
  if (!have) return true;
  const want = currentParams();
  return have.memoryCost < want.memoryCost || have.timeCost < want.timeCost || have.parallelism < want.parallelism;
}

export const MIN_PASSWORD_LENGTH = 8;
/** What is wrong with a new password, as a predicate ("is too short …") each caller gives its subject. */
export function passwordProblem(password: string): string | undefined {
  if (password.length < MIN_PASSWORD_LENGTH) return `is too short (minimum is ${MIN_PASSWORD_LENGTH} characters)`;
  if (password.length > 1024) return 'is too long (maximum is 1024 characters)';
  return undefined;
}

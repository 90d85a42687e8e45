// Password hashing: scrypt (memory-hard, in Node's crypto: no native addon in the Lambda bundle)
// at OWASP's recommended N=2^17, r=8, p=1 (128 MiB), stored as a PHC string so the cost can be
// raised later (needsRehash). Runs on libuv's thread pool, never on the event loop; a small
// semaphore bounds concurrent hashes so a burst of sign-ins cannot starve other requests.
import { randomBytes, scrypt as scryptCb, timingSafeEqual, type ScryptOptions } from 'node:crypto';

export interface ScryptParams {
  ln: number; // log2(N)
  r: number;
  p: number;
}

export const DEFAULT_PARAMS: ScryptParams = { ln: 17, r: 8, p: 1 };
const KEY_LENGTH = 32;
const MAX_CONCURRENT = 2;

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

function scrypt(password: string, salt: Buffer, params: ScryptParams, keylen: number): Promise<Buffer> {
  const N = 2 ** params.ln;
  const options: ScryptOptions = { N, r: params.r, p: params.p, maxmem: 128 * N * params.r * 2 + 1024 * 1024 };
  return withSlot(
    () =>
      new Promise((resolve, reject) =>
        scryptCb(password.normalize('NFKC'), salt, keylen, options, (err, key) => (err ? reject(err) : resolve(key))),
      ),
  );
}

let testParams: ScryptParams | undefined;
/** Tests may lower the cost (never the service). */
export function setPasswordParamsForTesting(params: ScryptParams | undefined): void {
  testParams = params;
}
const currentParams = (): ScryptParams => testParams ?? DEFAULT_PARAMS;

/** `$scrypt$ln=17,r=8,p=1$<salt b64>$<hash b64>` */
export async function hashPassword(password: string, params: ScryptParams = currentParams()): Promise<string> {
  const salt = randomBytes(16);
  const key = await scrypt(password, salt, params, KEY_LENGTH);
  const b64 = (b: Buffer) => b.toString('base64').replace(/=+$/, '');
  return `$scrypt$ln=${params.ln},r=${params.r},p=${params.p}$${b64(salt)}$${b64(key)}`;
}

function parse(phc: string): { params: ScryptParams; salt: Buffer; key: Buffer } | undefined {
  const m = /^\$scrypt\$ln=(\d+),r=(\d+),p=(\d+)\$([A-Za-z0-9+/]+)\$([A-Za-z0-9+/]+)$/.exec(phc);
  if (!m) return undefined;
  return {
    params: { ln: Number(m[1]), r: Number(m[2]), p: Number(m[3]) },
    salt: Buffer.from(m[4], 'base64'),
    key: Buffer.from(m[5], 'base64'),
  };
}

// A fixed hash to verify against when there is no user, so "no such user" costs the same time.
let dummyHash: Promise<string> | undefined;

/** Verify a password against a PHC string; a missing hash still spends the same work. */
export async function verifyPassword(password: string, phc: string | null | undefined): Promise<boolean> {
  const parsed = phc ? parse(phc) : undefined;
  if (!parsed) {
    dummyHash ??= hashPassword('lanyard-dummy-password');
    const dummy = parse(await dummyHash)!;
    await scrypt(password, dummy.salt, dummy.params, dummy.key.length);
    return false;
  }
  const key = await scrypt(password, parsed.salt, parsed.params, parsed.key.length);
  return key.length === parsed.key.length && timingSafeEqual(key, parsed.key);
}

/** True when the stored hash uses weaker parameters than today's: rehash on the next sign-in. */
export function needsRehash(phc: string): boolean {
  const parsed = parse(phc);
  if (!parsed) return true;
  const want = currentParams();
  return parsed.params.ln < want.ln || parsed.params.r < want.r || parsed.params.p < want.p;
}

export const MIN_PASSWORD_LENGTH = 8;
export function passwordProblem(password: string): string | undefined {
  if (password.length < MIN_PASSWORD_LENGTH)
    return `password is too short (minimum is ${MIN_PASSWORD_LENGTH} characters)`;
  if (password.length > 1024) return 'password is too long (maximum is 1024 characters)';
  return undefined;
}

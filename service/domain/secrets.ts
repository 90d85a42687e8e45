// Random secrets, their digests and constant-time comparison. Secrets are 256-bit random values,
// so a single SHA-256 is the right at-rest hash (a slow hash is for passwords only).
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';

// Random bytes are drawn from the CSPRNG a page at a time and handed out once each, in order: one
// randomBytes(32) call costs about 3 µs (the call into OpenSSL), a slice of the page 0.3, and a
// token grant takes two or three (bench/http.ts). Node's crypto.randomUUID keeps such a cache too.
const PAGE_BYTES = 4096;
let page = Buffer.alloc(0);
let taken = 0;

function freshBytes(count: number): Buffer {
  if (count > PAGE_BYTES) return randomBytes(count);
  if (taken + count > page.length) {
    page = randomBytes(PAGE_BYTES);
    taken = 0;
  }
  const bytes = page.subarray(taken, taken + count);
  taken += count;
  return bytes;
}

/** 64 lowercase hex characters (256 bits). */
export const randomHex = (bytes = 32): string => freshBytes(bytes).toString('hex');

export const sha256Hex = (value: string): string => createHash('sha256').update(value, 'utf8').digest('hex');

/** Constant-time equality of two strings (length leaks, content does not). */
export function safeEqual(a: string, b: string): boolean {
  const ab = Buffer.from(a, 'utf8');
  const bb = Buffer.from(b, 'utf8');
  if (ab.length !== bb.length) {
    timingSafeEqual(ab, ab);
    return false;
  }
  return timingSafeEqual(ab, bb);
}

/** Application secret: `gloas-` + 64 hex (GitLab's format). */
export const newApplicationSecret = (): string => `gloas-${randomHex()}`;
/** Personal access token: `glpat-` + 43 url-safe characters (256 bits). */
export const newPersonalAccessToken = (): string => `glpat-${randomBytes(32).toString('base64url')}`;

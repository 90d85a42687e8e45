// Random secrets, their digests and constant-time comparison. Secrets are 256-bit random values,
// so a single SHA-256 is the right at-rest hash (a slow hash is for passwords only).
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';

/** 64 lowercase hex characters (256 bits). */
export const randomHex = (bytes = 32): string => randomBytes(bytes).toString('hex');

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

// TOTP (RFC 6238, HMAC-SHA1, 30 s steps, 6 digits) and its otpauth:// enrolment URI.
import { createHmac, randomBytes } from 'node:crypto';
import { safeEqual } from './secrets';

const ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ234567';
export const STEP_SECONDS = 30;

export function base32Encode(buf: Buffer): string {
  let bits = 0;
  let value = 0;
  let out = '';
  for (const byte of buf) {
    value = (value << 8) | byte;
    bits += 8;
    while (bits >= 5) {
      out += ALPHABET[(value >>> (bits - 5)) & 31];
      bits -= 5;
    }
  }
  if (bits > 0) out += ALPHABET[(value << (5 - bits)) & 31];
  return out;
}

export function base32Decode(text: string): Buffer {
  const clean = text.replace(/=+$/, '').replace(/\s+/g, '').toUpperCase();
  let bits = 0;
  let value = 0;
  const out: number[] = [];
  for (const ch of clean) {
    const idx = ALPHABET.indexOf(ch);
    if (idx < 0) throw new Error('invalid base32');
    value = (value << 5) | idx;
    bits += 5;
    if (bits >= 8) {
      out.push((value >>> (bits - 8)) & 255);
      bits -= 8;
    }
  }
  return Buffer.from(out);
}

/** A new 160-bit secret, base32 (what authenticator apps expect). */
export const newTotpSecret = (): string => base32Encode(randomBytes(20));

/** RFC 4226 HOTP value for a counter. */
export function hotp(secret: string, counter: number): string {
  const msg = Buffer.alloc(8);
  msg.writeBigUInt64BE(BigInt(counter));
  const mac = createHmac('sha1', base32Decode(secret)).update(msg).digest();
  const offset = mac[mac.length - 1] & 0xf;
  const code = (mac.readUInt32BE(offset) & 0x7fffffff) % 1_000_000;
  return code.toString().padStart(6, '0');
}

export const timeStep = (now = Date.now()): number => Math.floor(now / 1000 / STEP_SECONDS);

/**
 * Check a code within ±1 step (RFC 6238 §5.2). Returns the matched step, or undefined.
 * A step at or before `lastUsedStep` is refused: a used code cannot be replayed.
 */
export function verifyTotp(
  secret: string,
  code: string,
  lastUsedStep: number | null,
  now = Date.now(),
): number | undefined {
  if (!/^\d{6}$/.test(code)) return undefined;
  const current = timeStep(now);
  let matched: number | undefined;
  for (const step of [current - 1, current, current + 1]) {
    if (safeEqual(hotp(secret, step), code) && matched === undefined) matched = step;
  }
  if (matched === undefined) return undefined;
  if (lastUsedStep !== null && matched <= lastUsedStep) return undefined;
  return matched;
}

export function otpauthUri(secret: string, account: string, issuer = 'Lanyard'): string {
  const label = encodeURIComponent(`${issuer}:${account}`);
  return `otpauth://totp/${label}?secret=${secret}&issuer=${encodeURIComponent(issuer)}&algorithm=SHA1&digits=6&period=${STEP_SECONDS}`;
}

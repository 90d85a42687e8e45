// How a person signed in, in the words of RFC 8176 (Authentication Method Reference Values) for the
// ID token's `amr`, and the `acr` derived from it: the one home of both. The sign-in pages record
// the methods on the session when the sign-in completes; they travel with the authorization code
// (and its refreshes) into the ID token.

/** RFC 8176 §2: the values Lanyard uses. */
export type AuthenticationMethod = 'pwd' | 'otp' | 'hwk' | 'swk' | 'user' | 'mfa';

const ORDER: readonly AuthenticationMethod[] = ['pwd', 'otp', 'hwk', 'swk', 'user', 'mfa'];

/**
 * The `amr` of a sign-in from its steps, in a stable order. `mfa` (RFC 8176: "multiple-factor
 * authentication") when two factors were shown: a password with a code or a key, or a WebAuthn
 * credential with user verification (possession, and the PIN or biometric the authenticator checked).
 */
export function authenticationMethods(steps: readonly AuthenticationMethod[]): AuthenticationMethod[] {
  const set = new Set<AuthenticationMethod>(steps.filter((s) => s !== 'mfa'));
  const key = set.has('hwk') || set.has('swk');
  const factors =
    (set.has('pwd') ? 1 : 0) + (set.has('otp') ? 1 : 0) + (key ? 1 : 0) + (key && set.has('user') ? 1 : 0);
  if (factors >= 2) set.add('mfa');
  return ORDER.filter((m) => set.has(m));
}

/**
 * Authentication Context Class References (OIDC Core §2 `acr`), weakest to strongest:
 * `phrh` and `phr` as OpenID Connect Extended Authentication Profile ACR Values 1.0 defines them
 * (phishing-resistant, and hardware-protected too), `mfa` for two factors that can be phished (a
 * password and a TOTP or recovery code), `pwd` for a password alone.
 */
export const ACR_VALUES = ['pwd', 'mfa', 'phr', 'phrh'] as const;
export type Acr = (typeof ACR_VALUES)[number];

export function acrOf(amr: readonly string[]): Acr {
  if (amr.includes('hwk') && amr.includes('mfa')) return 'phrh';
  if ((amr.includes('hwk') || amr.includes('swk')) && amr.includes('mfa')) return 'phr';
  if (amr.includes('mfa')) return 'mfa';
  return 'pwd';
}

// PKCE (RFC 7636): the challenge at /oauth/authorize, the verifier at /oauth/token.
import { createHash } from 'node:crypto';
import type { VerifierCandidates } from '../domain/authorization-codes';
import { safeEqual } from '../domain/secrets';
import { InvalidRequest } from './errors';

export type CodeChallengeMethod = 'S256' | 'plain';
export const CODE_CHALLENGE_METHODS: readonly CodeChallengeMethod[] = ['S256', 'plain'];

/** RFC 7636 §4.1 (verifier) and §4.2 (challenge): 43–128 unreserved characters. */
const PKCE_VALUE = /^[A-Za-z0-9\-._~]{43,128}$/;

/**
 * Validate the authorize request's PKCE parameters (RFC 7636 §4.3). A challenge without a method
 * is refused (RFC 7636 would default to `plain`; the contract asks for an explicit method).
 */
export function parseCodeChallenge(
  challenge: string | undefined,
  method: string | undefined,
): { codeChallenge: string; codeChallengeMethod: CodeChallengeMethod } | undefined {
  if (challenge === undefined || challenge === '') {
    if (method !== undefined && method !== '') throw new InvalidRequest();
    return undefined;
  }
  if (!method || !(CODE_CHALLENGE_METHODS as string[]).includes(method)) throw new InvalidRequest();
  if (!PKCE_VALUE.test(challenge)) throw new InvalidRequest();
  return { codeChallenge: challenge, codeChallengeMethod: method as CodeChallengeMethod };
}

/**
 * RFC 7636 §4.6, for a comparison made where the challenge is stored: what the verifier may match.
 * A malformed verifier matches nothing; one sent at all refuses a code issued without a challenge.
 */
export function verifierCandidates(verifier: string | undefined): VerifierCandidates {
  // An empty code_verifier counts as none (the exchange has always read it so).
  if (!verifier) return { given: false, s256: null, plain: null };
  if (!PKCE_VALUE.test(verifier)) return { given: true, s256: null, plain: null };
  return { given: true, s256: createHash('sha256').update(verifier, 'ascii').digest('base64url'), plain: verifier };
}

/** RFC 7636 §4.6: does the verifier match the stored challenge? */
export function verifyCodeVerifier(verifier: string, challenge: string, method: CodeChallengeMethod): boolean {
  if (!PKCE_VALUE.test(verifier)) return false;
  const computed = method === 'S256' ? createHash('sha256').update(verifier, 'ascii').digest('base64url') : verifier;
  return safeEqual(computed, challenge);
}

// PKCE (RFC 7636): the challenge at /oauth/authorize, the verifier at /oauth/token.
import { createHash } from 'node:crypto';
import type { VerifierCandidates } from '../domain/authorization-codes';
import { InvalidRequest } from './errors';

export type CodeChallengeMethod = 'S256' | 'plain';
export const CODE_CHALLENGE_METHODS: readonly CodeChallengeMethod[] = ['S256', 'plain'];

/**
 * A challenge: 43–128 visible ASCII characters. RFC 7636 §4.2 asks for the unreserved alphabet, but
 * clients in the field (git-credential-oauth 0.4.2) send standard base64 (`+`, `/`, `=`), and with
 * `plain` the challenge is that verifier. Doorkeeper (GitLab) checks no alphabet at all; the length
 * bound and the refusal of spaces and control characters stay.
 */
const CODE_CHALLENGE = /^[\x21-\x7e]{43,128}$/;

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
  if (!CODE_CHALLENGE.test(challenge)) throw new InvalidRequest();
  return { codeChallenge: challenge, codeChallengeMethod: method as CodeChallengeMethod };
}

/**
 * RFC 7636 §4.6, for the comparison made in SQL where the challenge is stored: the verifier's
 * transforms. As Doorkeeper does, any verifier counts, whatever its alphabet or length: it is
 * accepted only when its transform equals the challenge the client committed to, so a lax
 * alphabet weakens nothing. An empty or missing verifier is none: a code bound to a challenge
 * refuses it, and one sent at all refuses a code issued without a challenge (RFC 9700 §2.1.1).
 */
export function verifierCandidates(verifier: string | undefined): VerifierCandidates {
  if (!verifier) return { given: false, s256: null, plain: null };
  // S256: BASE64URL(SHA256(ASCII(verifier))); Doorkeeper hashes the string's UTF-8 bytes, which
  // are the same bytes for ASCII and defined for anything else.
  return { given: true, s256: createHash('sha256').update(verifier, 'utf8').digest('base64url'), plain: verifier };
}

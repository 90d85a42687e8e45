// DPoP at the protected resources (RFC 9449 §7): /api/v4, /oauth/userinfo and /oauth/token/info.
// Reads `Authorization: DPoP <token>` and the request's proof, and decides, once for all three, whether
// the token's binding holds: a bound token needs the DPoP scheme and a valid proof of its key (ath
// included); an unbound token is a bearer token. The proof's jti is consumed only once the request
// is otherwise accepted (consumeResourceProof), so a refusal writes nothing.
import type { FastifyRequest } from 'fastify';
import type { Db } from '../db/schema';
import {
  consumeDpopProof,
  type DpopProof,
  DpopProofError,
  dpopChallenge,
  replayedProof,
  verifyDpopProof,
} from '../domain/dpop';
import { ApiError } from './errors';

/** The token of `Authorization: DPoP <token>` (§7.1), or undefined. */
export const dpopTokenFromHeader = (authorization: string | undefined): string | undefined =>
  authorization ? /^DPoP\s+(\S+)\s*$/i.exec(authorization)?.[1] : undefined;

/**
 * A refusal (§7.1): 401, `{"error","error_description"}` (the same on /api/v4 and /oauth), the DPoP
 * challenge with the accepted algorithms, and a DPoP-Nonce with use_dpop_nonce.
 */
function refused(error: 'invalid_token' | DpopProofError['error'], description: string, nonce?: string): ApiError {
  const headers: Record<string, string> = {
    'WWW-Authenticate': dpopChallenge(error, description),
    'cache-control': 'no-store',
    pragma: 'no-cache',
  };
  if (nonce) headers['DPoP-Nonce'] = nonce;
  return new ApiError(401, { error, error_description: description }, headers);
}

interface ResourceProofInput {
  /** The scheme the token came with: DPoP, or anything else (Bearer, a query or form parameter). */
  dpopScheme: boolean;
  token: string;
  /** The token's bound key (cnf.jkt), null for a bearer token. */
  boundJkt: string | null;
  publicUrl: string;
  requireNonce: boolean;
}

/**
 * Check the binding of a live OAuth access token (§7.1): returns the proof to consume once the
 * request is accepted (undefined for a bearer token), or throws the refusal.
 */
export async function checkResourceProof(
  request: FastifyRequest,
  input: ResourceProofInput,
): Promise<DpopProof | undefined> {
  // §7.2: a DPoP-bound token presented as a bearer token is refused (a stolen token is useless).
  if (!input.dpopScheme) {
    if (input.boundJkt !== null) throw refused('invalid_token', 'DPoP-bound access token requires the DPoP scheme');
    return undefined;
  }
  if (input.boundJkt === null) throw refused('invalid_token', 'access token is not DPoP-bound');
  let proof: DpopProof | undefined;
  try {
    proof = await verifyDpopProof({
      header: request.headers.dpop,
      method: request.method,
      // The URL the client addressed: PUBLIC_URL and the path (a proxy or API Gateway in front
      // sees another host); the query is not part of htu.
      url: `${input.publicUrl}${request.url.split('?')[0]}`,
      accessToken: input.token,
      ring: () => request.server.sessions.keyRing().load(),
      requireNonce: input.requireNonce,
    });
  } catch (err) {
    if (err instanceof DpopProofError) throw refused(err.error, err.description, err.nonce);
    throw err;
  }
  if (!proof) throw refused('invalid_dpop_proof', 'DPoP proof required');
  if (proof.jkt !== input.boundJkt) throw refused('invalid_dpop_proof', 'DPoP proof key does not match the token');
  return proof;
}

/** §11.1: record the accepted proof's jti; a replay (here or on any other instance) is refused. */
export async function consumeResourceProof(db: Db, proof: DpopProof | undefined): Promise<void> {
  if (proof && !(await consumeDpopProof(db, proof))) {
    const { error, description } = replayedProof();
    throw refused(error, description);
  }
}

// DPoP at the token endpoint (RFC 9449 §5): the request's proof checked, its jti consumed only if
// the grant succeeds, and the proof errors as OAuth errors (400, DPoP-Nonce with use_dpop_nonce).
// The proof rules themselves are domain/dpop.ts's, shared with the protected resources.
import type { Db } from '../db/schema';
import {
  consumeDpopProof,
  type DpopProof,
  DpopProofError,
  type DpopRequest,
  releaseDpopProof,
  replayedProof,
  verifyDpopProof,
} from '../domain/dpop';
import { OAuthError } from './errors';

/** §5 (and §8): the proof error as the token endpoint answers it. */
function tokenEndpointError(err: DpopProofError): OAuthError {
  const error = new OAuthError(err.error, 400, err.description);
  if (err.nonce) error.headers['DPoP-Nonce'] = err.nonce;
  return error;
}

/**
 * The token request's proof, undefined without one. `required` (the application's
 * dpop_bound_access_tokens, RFC 9449 §5.2): a request without a proof is refused.
 */
export async function tokenRequestProof(
  input: Omit<DpopRequest, 'method' | 'accessToken'> & { required: boolean },
): Promise<DpopProof | undefined> {
  try {
    const proof = await verifyDpopProof({ ...input, method: 'POST' });
    if (!proof && input.required) throw new DpopProofError('invalid_dpop_proof', 'DPoP proof required');
    return proof;
  } catch (err) {
    throw err instanceof DpopProofError ? tokenEndpointError(err) : err;
  }
}

/**
 * Run the grant with the proof's jti consumed (§11.1: of concurrent uses of one proof one gets
 * this far); a refused grant gives the jti back, so a refusal leaves nothing behind.
 */
export async function withConsumedProof<T>(db: Db, proof: DpopProof | undefined, run: () => Promise<T>): Promise<T> {
  if (!proof) return run();
  if (!(await consumeDpopProof(db, proof))) throw tokenEndpointError(replayedProof());
  try {
    return await run();
  } catch (err) {
    await releaseDpopProof(db, proof);
    throw err;
  }
}

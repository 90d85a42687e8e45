// The OpenID Connect signing key document kept in a Secrets Manager secret when deployed, in the
// format of domain/signing-keys.ts. The migration function writes the first key on the first
// deploy (the private key never passes through Pulumi state); the admin function rotates it; the
// API function reads it and caches it for SIGNING_KEY_CACHE_SECONDS.
import {
  documentSigningKeySource,
  parseSigningKeyDocument,
  rotateSigningKeyDocument,
  type SigningKeyPolicy,
  type SigningKeyRotation,
  type SigningKeySource,
} from '../domain/signing-keys';
import type { SecretStore } from './secret-store';

/** Create the first key if the secret has no value yet; a present document is validated, never replaced. */
export async function ensureSigningKeySecret(
  store: SecretStore,
  arn: string,
  policy: SigningKeyPolicy,
): Promise<'created' | 'present'> {
  const current = await store.get(arn);
  if (current !== undefined) {
    await parseSigningKeyDocument(current, policy);
    return 'present';
  }
  // A fixed request token: two deploys racing on an empty secret cannot both write a first key.
  const { document } = await rotateSigningKeyDocument(undefined, policy);
  await store.put(arn, document, 'lanyard-signing-keys-initial-v1');
  return 'created';
}

/** `secrets rotate signing-key` against the deployed secret: stage a key, or activate the staged one. */
export async function rotateSigningKeySecret(
  store: SecretStore,
  arn: string,
  policy: SigningKeyPolicy,
  activateAfterSeconds = 0,
): Promise<SigningKeyRotation> {
  const rotation = await rotateSigningKeyDocument(await store.get(arn), policy, new Date(), activateAfterSeconds);
  await store.put(arn, rotation.document);
  return rotation;
}

/** The API's source over the secret: fetched at most once per `policy.cacheSeconds`. */
export function secretSigningKeySource(store: SecretStore, arn: string, policy: SigningKeyPolicy): SigningKeySource {
  let cached: { text: Promise<string>; at: number } | undefined;
  const fetchDocument = () => {
    if (!cached || Date.now() - cached.at >= policy.cacheSeconds * 1000) {
      const text = store.get(arn).then((value) => {
        if (value === undefined)
          throw new Error(`the signing key secret ${arn} has no value (run the migration function)`);
        return value;
      });
      const entry = { text, at: Date.now() };
      cached = entry;
      text.catch(() => {
        if (cached === entry) cached = undefined; // a failed fetch is retried by the next call
      });
    }
    return cached.text;
  };
  return documentSigningKeySource(fetchDocument, policy);
}

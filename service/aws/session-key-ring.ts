// The session/CSRF key ring kept in a Secrets Manager secret when deployed, in the document
// format of domain/service-keys.ts. The migration function seeds it on the first deploy (so the
// value never passes through Pulumi state); the admin function rotates it.
import {
  documentKeyRingSource,
  rotateKeyRingDocument,
  parseKeyRingDocument,
  type KeyRing,
  type KeyRingSource,
} from '../domain/service-keys';
import type { SecretStore } from './secret-store';

/** Create the ring if the secret has no value yet; a present ring is validated, never replaced. */
export async function ensureKeyRingSecret(store: SecretStore, arn: string): Promise<'created' | 'present'> {
  const current = await store.get(arn);
  if (current !== undefined) {
    parseKeyRingDocument(current);
    return 'present';
  }
  // A fixed request token: two deploys racing on an empty secret cannot both write a first key.
  await store.put(arn, rotateKeyRingDocument(undefined).document, 'lanyard-session-key-ring-initial-v1');
  return 'created';
}

/** `secrets rotate session-key` against the deployed secret: a new signing key, the old ones verify on. */
export async function rotateKeyRingSecret(
  store: SecretStore,
  arn: string,
): Promise<{ rotated: true; keyId: string; ring: KeyRing }> {
  const { document, keyId } = rotateKeyRingDocument(await store.get(arn));
  await store.put(arn, document);
  return { rotated: true, keyId, ring: parseKeyRingDocument(document) };
}

/** The app's KeyRingSource over the secret (wrap in cachedKeyRingSource). */
export const secretKeyRingSource = (store: SecretStore, arn: string): KeyRingSource =>
  documentKeyRingSource(async () => {
    const text = await store.get(arn);
    if (text === undefined)
      throw new Error(`the session key ring secret ${arn} has no value (run the migration function)`);
    return text;
  });

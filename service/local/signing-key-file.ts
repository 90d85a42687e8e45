// The local signing key document: LANYARD_HOME/signing-keys.json, mode 0600, created on first use.
// A file rather than the database: encrypting the key with the session key ring would keep it in
// the same database as the key that decrypts it (a dump or backup holds both), while a 0600 file
// keeps the private key out of the database and its backups entirely — the same separation the
// deployed Secrets Manager secret gives, in the same document format.
import path from 'node:path';
import {
  documentSigningKeySource,
  rotateSigningKeyDocument,
  type SigningKeyPolicy,
  type SigningKeyRotation,
  type SigningKeySource,
} from '../domain/signing-keys';
import { ensurePrivateFile, readIfPresent, replacePrivateFile } from './private-file';

export const signingKeyFilePath = (home: string) => path.join(home, 'signing-keys.json');

/** The document, created with a first key when missing (two processes racing: one file wins). */
export async function ensureSigningKeyFile(home: string, policy: SigningKeyPolicy): Promise<string> {
  return ensurePrivateFile(
    signingKeyFilePath(home),
    async () => (await rotateSigningKeyDocument(undefined, policy)).document,
  );
}

/** `secrets rotate signing-key` locally (stage, then activate): the new document replaces the old one atomically. */
export async function rotateSigningKeyFile(
  home: string,
  policy: SigningKeyPolicy,
  activateAfterSeconds: number,
): Promise<SigningKeyRotation> {
  const file = signingKeyFilePath(home);
  const rotation = await rotateSigningKeyDocument(await readIfPresent(file), policy, new Date(), activateAfterSeconds);
  await replacePrivateFile(file, rotation.document);
  return rotation;
}

/**
 * Re-read at most once per SIGNING_KEY_CACHE_SECONDS, as the deployed secret is: a rotation by the
 * admin CLI applies within that time, which its staged activation already waits out (0 re-reads on
 * every load). Reading on every ID token cost an open, fstat, read and close per code exchange,
 * 5 % of the server's CPU in bench/http.ts's code flow.
 */
export function fileSigningKeySource(home: string, policy: SigningKeyPolicy): SigningKeySource {
  let read: { at: number; text: Promise<string> } | undefined;
  return documentSigningKeySource(() => {
    const now = Date.now();
    if (!read || now - read.at >= policy.cacheSeconds * 1000) {
      const text = ensureSigningKeyFile(home, policy);
      read = { at: now, text };
      // A failed read is retried by the next load, not cached.
      text.catch(() => {
        if (read?.text === text) read = undefined;
      });
    }
    return read.text;
  }, policy);
}

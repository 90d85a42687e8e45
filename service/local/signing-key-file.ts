// The local signing key document: LANYARD_HOME/signing-keys.json, mode 0600, created on first use.
// A file rather than the database: encrypting the key with the session key ring would keep it in
// the same database as the key that decrypts it (a dump or backup holds both), while a 0600 file
// keeps the private key out of the database and its backups entirely — the same separation the
// deployed Secrets Manager secret gives, in the same document format.
import { randomBytes } from 'node:crypto';
import { chmod, link, mkdir, readFile, rename, unlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import {
  documentSigningKeySource,
  rotateSigningKeyDocument,
  type SigningKeyPolicy,
  type SigningKeySource,
} from '../domain/signing-keys';

export const signingKeyFilePath = (home: string) => path.join(home, 'signing-keys.json');

async function readIfPresent(file: string): Promise<string | undefined> {
  try {
    return await readFile(file, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
}

async function writeTemp(file: string, text: string): Promise<string> {
  await mkdir(path.dirname(file), { recursive: true, mode: 0o700 });
  const tmp = `${file}.${randomBytes(6).toString('hex')}.tmp`;
  await writeFile(tmp, text, { mode: 0o600, flag: 'wx' });
  await chmod(tmp, 0o600); // whatever the umask
  return tmp;
}

/** The document, created with a first key when missing (two processes racing: one file wins). */
export async function ensureSigningKeyFile(home: string, policy: SigningKeyPolicy): Promise<string> {
  const file = signingKeyFilePath(home);
  const existing = await readIfPresent(file);
  if (existing !== undefined) return existing;
  const tmp = await writeTemp(file, (await rotateSigningKeyDocument(undefined, policy)).document);
  try {
    await link(tmp, file); // fails with EEXIST if another process created it first
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
  } finally {
    await unlink(tmp);
  }
  return readFile(file, 'utf8');
}

/** `secrets rotate signing-key` locally: the new document replaces the old one atomically. */
export async function rotateSigningKeyFile(home: string, policy: SigningKeyPolicy): Promise<{ kid: string }> {
  const file = signingKeyFilePath(home);
  const { document, kid } = await rotateSigningKeyDocument(await readIfPresent(file), policy);
  await rename(await writeTemp(file, document), file);
  return { kid };
}

/** Re-read on every load (a small local file): a rotation by the admin CLI applies at once. */
export const fileSigningKeySource = (home: string, policy: SigningKeyPolicy): SigningKeySource =>
  documentSigningKeySource(() => ensureSigningKeyFile(home, policy), policy);

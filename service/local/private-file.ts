// Small documents kept under LANYARD_HOME, readable by this user only (0600 in a 0700 folder):
// the OpenID Connect signing keys and the service key ring. Created once (two processes racing:
// one file wins), replaced atomically (a reader sees the old document or the new one).
import { randomBytes } from 'node:crypto';
import { chmod, link, mkdir, readFile, rename, unlink, writeFile } from 'node:fs/promises';
import path from 'node:path';

export async function readIfPresent(file: string): Promise<string | undefined> {
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

/** The file's text, created from `initial()` when missing (the first writer wins a race). */
export async function ensurePrivateFile(file: string, initial: () => Promise<string> | string): Promise<string> {
  const existing = await readIfPresent(file);
  if (existing !== undefined) return existing;
  const tmp = await writeTemp(file, await initial());
  try {
    await link(tmp, file); // fails with EEXIST if another process created it first
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
  } finally {
    await unlink(tmp);
  }
  return readFile(file, 'utf8');
}

/** Replace the file's text atomically (write a 0600 temporary file, then rename it over). */
export async function replacePrivateFile(file: string, text: string): Promise<void> {
  await rename(await writeTemp(file, text), file);
}

// Small documents kept under LANYARD_HOME, readable by this user only (0600 in a 0700 folder):
// the OpenID Connect signing keys and the service key ring. Created once (two processes racing:
// one file wins), replaced atomically (a reader sees the old document or the new one).
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';

// fs.promises is read where it is used, not imported: node:fs/promises (with readline and the fs
// watchers) would load at every start, and the Lambda functions, whose keys live in Secrets
// Manager, never touch these files.

export async function readIfPresent(file: string): Promise<string | undefined> {
  try {
    return await fs.promises.readFile(file, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
}

async function writeTemp(file: string, text: string): Promise<string> {
  await fs.promises.mkdir(path.dirname(file), { recursive: true, mode: 0o700 });
  const tmp = `${file}.${randomBytes(6).toString('hex')}.tmp`;
  await fs.promises.writeFile(tmp, text, { mode: 0o600, flag: 'wx' });
  await fs.promises.chmod(tmp, 0o600); // whatever the umask
  return tmp;
}

/** The file's text, created from `initial()` when missing (the first writer wins a race). */
export async function ensurePrivateFile(file: string, initial: () => Promise<string> | string): Promise<string> {
  const existing = await readIfPresent(file);
  if (existing !== undefined) return existing;
  const tmp = await writeTemp(file, await initial());
  try {
    await fs.promises.link(tmp, file); // fails with EEXIST if another process created it first
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
  } finally {
    await fs.promises.unlink(tmp);
  }
  return fs.promises.readFile(file, 'utf8');
}

/** Replace the file's text atomically (write a 0600 temporary file, then rename it over). */
export async function replacePrivateFile(file: string, text: string): Promise<void> {
  await fs.promises.rename(await writeTemp(file, text), file);
}

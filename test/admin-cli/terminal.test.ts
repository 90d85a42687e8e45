// The interactive paths on a real terminal: `script` gives the CLI a pseudo-terminal, and the test
// types only once a prompt is shown, as a person would. The password prompt must not echo; a
// destructive command asks before acting.
import { spawn, spawnSync } from 'node:child_process';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import type { Db } from '../../service/db/schema';
import { verifyPassword } from '../../service/domain/passwords';
import { findUserByUsername } from '../../service/domain/users';
import { createTestDatabase } from '../support/db';

const ROOT = path.resolve(__dirname, '..', '..');
const hasScript = spawnSync('script', ['--version']).status === 0;
const PASSWORD = 'typed at the prompt 42';

let db: Db;
let url: string;
beforeAll(async () => {
  ({ db, url } = await createTestDatabase());
});

/** Run lanyard-admin on a pseudo-terminal; `replies` maps a prompt to what is typed after it. */
function onTerminal(args: string[], replies: Array<[prompt: string, typed: string]>) {
  return new Promise<{ code: number | null; screen: string }>((resolve, reject) => {
    const command = ['node', 'bin/lanyard-admin.cjs', ...args].map((a) => `'${a.replace(/'/g, `'\\''`)}'`).join(' ');
    const child = spawn('script', ['-qec', command, '/dev/null'], {
      cwd: ROOT,
      env: { ...process.env, DATABASE_URL: url },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let screen = '';
    let next = 0;
    let from = 0;
    child.stdout.on('data', (d) => {
      screen += d;
      // Type each reply once its prompt has appeared (after the previous one).
      while (next < replies.length) {
        const at = screen.indexOf(replies[next][0], from);
        if (at < 0) break;
        from = at + replies[next][0].length;
        child.stdin.write(`${replies[next++][1]}\r`);
      }
    });
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, screen }));
  });
}

describe.skipIf(!hasScript)('on a terminal', () => {
  it('prompts for the password twice without echoing it', async () => {
    const { code, screen } = await onTerminal(
      ['users', 'create', '--username', 'tty', '--email', 'tty@example.com'],
      [
        ['Password: ', PASSWORD],
        ['Confirm password: ', PASSWORD],
      ],
    );
    expect(screen).toContain('Password: ');
    expect(screen).toContain('Confirm password: ');
    expect(screen).not.toContain(PASSWORD);
    expect(screen).toContain('Created user tty.');
    expect(code).toBe(0);
    expect(await verifyPassword(PASSWORD, (await findUserByUsername(db, 'tty'))!.password_hash)).toBe(true);
  }, 120_000);

  it('asks before blocking: "n" changes nothing, "y" blocks', async () => {
    const no = await onTerminal(['users', 'block', 'tty'], [['[y/N] ', 'n']]);
    expect(no.screen).toContain('Block user tty? ');
    expect(no.screen).toContain('lanyard-admin: aborted; nothing changed');
    expect(no.code).toBe(1);
    expect((await findUserByUsername(db, 'tty'))!.state).toBe('active');
    const yes = await onTerminal(['users', 'block', 'tty'], [['[y/N] ', 'y']]);
    expect(yes.screen).toContain('Blocked user tty.');
    expect(yes.code).toBe(0);
    expect((await findUserByUsername(db, 'tty'))!.state).toBe('blocked');
  }, 120_000);

  it('Ctrl-C at the password prompt aborts and changes nothing', async () => {
    const hash = (await findUserByUsername(db, 'tty'))!.password_hash;
    const { code, screen } = await onTerminal(['users', 'set-password', 'tty'], [['Password: ', '\u0003']]);
    expect(screen).toMatch(/Password: .*\r?\n.*lanyard-admin: aborted; nothing changed/s);
    expect(code).toBe(1);
    expect((await findUserByUsername(db, 'tty'))!.password_hash).toBe(hash);
  }, 120_000);

  it('set-2fa on draws the QR code on a terminal (a pipe gets none: subprocess.test.ts)', async () => {
    const { code, screen } = await onTerminal(['users', 'set-2fa', 'tty', 'on'], []);
    expect(code).toBe(0);
    expect(screen).toContain('Scan this code with an authenticator app:');
    expect(screen).toMatch(/[▀▄█]{20,}/);
  }, 120_000);
});

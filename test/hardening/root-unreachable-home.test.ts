// Regression (issue 22): "`npm start` as root fails when any folder above LANYARD_HOME is mode
// 0700" — the embedded PostgreSQL runs as the postgres user, and initdb died with a bare
// "Permission denied". Now the start-up names the folder and the fixes, in one line; with the
// folder opened up as told, the same LANYARD_HOME starts.
import { chmodSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { firstUnreachableFolder } from '../../service/db/local-postgres';
import { openDatabase } from '../../service/db/open';

const isRoot = typeof process.getuid === 'function' && process.getuid() === 0;
const created: string[] = [];
afterAll(() => {
  for (const dir of created) rmSync(dir, { recursive: true, force: true });
});

describe('npm start as root with a 0700 folder above LANYARD_HOME', () => {
  it('the first folder the postgres user cannot enter (owner, group and others bits)', () => {
    const tree: Record<string, { mode: number; uid: number; gid: number }> = {
      '/': { mode: 0o755, uid: 0, gid: 0 },
      '/root': { mode: 0o700, uid: 0, gid: 0 },
      '/srv': { mode: 0o750, uid: 0, gid: 999 },
      '/srv/pg': { mode: 0o700, uid: 999, gid: 999 },
    };
    const stat = (dir: string) => tree[dir];
    const postgres = { uid: 999, gid: 999 };
    expect(firstUnreachableFolder('/root/app/.lanyard', postgres, stat)).toEqual({ dir: '/root', mode: 0o700 });
    // Group search bit (postgres is in the group), then its own folder: reachable; missing parts are ours to create.
    expect(firstUnreachableFolder('/srv/pg/data', postgres, stat)).toBeUndefined();
    expect(firstUnreachableFolder('/srv/pg', { uid: 1000, gid: 1000 }, stat)).toEqual({ dir: '/srv', mode: 0o750 });
  });

  it.runIf(isRoot)(
    'answers one line naming the folder and the fixes; after chmod o+x it starts',
    async () => {
      const outer = mkdtempSync(path.join(os.tmpdir(), 'lanyard-0700-'));
      created.push(outer);
      chmodSync(outer, 0o700);
      const home = path.join(outer, 'app', '.lanyard');
      mkdirSync(home, { recursive: true });
      await expect(openDatabase({ home, max: 1, applicationName: 'test' })).rejects.toThrow(
        `cannot start the local PostgreSQL in ${home}: running as root, the embedded PostgreSQL runs as the postgres user, which cannot enter ${outer} (mode 0700) to reach ${home}: let it through (chmod o+x ${outer}), or set LANYARD_HOME to a folder it can reach (e.g. /var/lib/lanyard), or set DATABASE_URL`,
      );
      chmodSync(outer, 0o701);
      chmodSync(path.join(outer, 'app'), 0o755);
      const database = await openDatabase({ home, max: 1, applicationName: 'test' });
      try {
        expect(database.local).toBeDefined();
      } finally {
        await database.close();
      }
    },
    120_000,
  );
});

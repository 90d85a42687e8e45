// The fingerprint of the migrations that decides when `pulumi up` re-runs the migration function:
// SHA-256 over every file under migrations/ (relative path and bytes, sorted), so adding or
// changing a migration re-invokes it and nothing else does.
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';

export function hashMigrations(dir: string): string {
  const files: string[] = [];
  const walk = (d: string) => {
    for (const entry of fs.readdirSync(d, { withFileTypes: true })) {
      const full = path.join(d, entry.name);
      if (entry.isDirectory()) walk(full);
      else if (entry.isFile()) files.push(full);
    }
  };
  walk(dir);
  if (!files.length) throw new Error(`no migration files under ${dir}`);
  const hash = createHash('sha256');
  for (const file of files.map((f) => path.relative(dir, f).split(path.sep).join('/')).sort()) {
    hash.update(`${file}\0`);
    hash.update(fs.readFileSync(path.join(dir, file)));
    hash.update('\0');
  }
  return hash.digest('hex');
}

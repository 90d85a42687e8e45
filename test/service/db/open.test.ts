// The database pool's default size (service/db/open.ts): by where PostgreSQL runs.
import { describe, expect, it } from 'vitest';
import { defaultPoolSize } from '../../../service/db/open';

describe('defaultPoolSize', () => {
  it('a database on this machine: one connection per core, at least 2 and at most 10', () => {
    for (const url of [
      'postgres://u:p@127.0.0.1:5432/db',
      'postgres://u:p@127.0.1.1/db',
      'postgresql://u:p@localhost/db',
      'postgres://u:p@[::1]:5432/db',
      'postgres:///db',
      'postgres://u:p@ignored/db?host=/run/postgresql',
      'postgres://u:p@localhost/db?host=%2Ftmp',
    ]) {
      expect(
        [1, 2, 4, 16].map((cores) => defaultPoolSize(url, { cores })),
        url,
      ).toEqual([2, 2, 4, 10]);
    }
  });

  it('the embedded database, whatever its URL says: by cores', () => {
    expect(defaultPoolSize('postgres://u:p@db.internal/db', { embedded: true, cores: 4 })).toBe(4);
  });

  it('a remote database: 10, to cover the network round trips', () => {
    for (const url of [
      'postgres://u:p@db.example.com:5432/db',
      'postgres://u:p@10.0.0.5/db',
      'postgres://u:p@128.0.0.1/db',
      'postgres://u:p@[2001:db8::1]/db',
      'postgres://u:p@localhost.example.com/db',
    ]) {
      expect(defaultPoolSize(url, { cores: 2 }), url).toBe(10);
    }
  });
});

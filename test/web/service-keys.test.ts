import { mkdtempSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { beforeEach, describe, expect, it } from 'vitest';
import type { Db } from '../../service/db/schema';
import {
  cachedKeyRingSource,
  documentKeyRingSource,
  parseKeyRingDocument,
  RETIRED_KEY_VERIFY_SECONDS,
  rotateKeyRingDocument,
  rotateSessionKey,
  signWithRing,
  verifyWithRing,
} from '../../service/domain/service-keys';
import { serviceKeyFilePath, fileKeyRingSource, serviceKeyFileStore } from '../../service/local/service-key-file';
import { resetDatabase } from '../support/db';
import { useFixture } from '../oauth/support/harness';

const fixture = useFixture();
let db: Db;

describe('the local service key ring (LANYARD_HOME/service-keys.json)', () => {
  let home: string;
  beforeEach(async () => {
    db = fixture.db;
    await resetDatabase(db);
    home = mkdtempSync(path.join(os.tmpdir(), 'lanyard-keys-'));
  });

  it('creates the first key on demand, once, even when loaded concurrently; the file is 0600', async () => {
    const rings = await Promise.all([1, 2, 3].map(() => fileKeyRingSource(home).load()));
    expect(new Set(rings.map((r) => r.signing.id)).size).toBe(1);
    expect(statSync(serviceKeyFilePath(home)).mode & 0o777).toBe(0o600);
    expect(JSON.parse(readFileSync(serviceKeyFilePath(home), 'utf8')).keys).toHaveLength(1);
  });

  it('rotation: the new key signs, the old one still verifies (nobody is signed out)', async () => {
    const before = await fileKeyRingSource(home).load();
    const sig = signWithRing(before, 'session', 'abc');
    const result = await rotateSessionKey(db, serviceKeyFileStore(home), 'cli:test');
    expect(result).toEqual({ rotated: true, keyId: expect.stringMatching(/^[0-9a-f]{16}$/), resealedTotpSecrets: 0 });
    const after = await fileKeyRingSource(home).load();
    expect(after.signing.id).toBe(result.keyId);
    expect(after.signing.id).not.toBe(before.signing.id);
    expect(verifyWithRing(after, 'session', 'abc', sig)).toBe(true);
    expect(verifyWithRing(after, 'csrf', 'abc', sig)).toBe(false);
    expect(signWithRing(after, 'session', 'abc')).not.toBe(sig);
    expect(statSync(serviceKeyFilePath(home)).mode & 0o777).toBe(0o600);
    const audit = await db.selectFrom('audit_events').select(['actor', 'action']).execute();
    expect(audit).toEqual([{ actor: 'cli:test', action: 'service_key.rotate' }]);
  });

  it('keys retired longer ago than the longest session age out and are dropped by the next rotation', async () => {
    const old = new Date(Date.now() - (RETIRED_KEY_VERIFY_SECONDS + 60) * 1000).toISOString();
    writeFileSync(
      serviceKeyFilePath(home),
      JSON.stringify({
        keys: [
          { id: 'new', secret: 'a'.repeat(64), created_at: new Date().toISOString(), retired_at: null },
          { id: 'old', secret: 'b'.repeat(64), created_at: old, retired_at: old },
        ],
      }),
    );
    expect((await fileKeyRingSource(home).load()).verifying.map((k) => k.id)).toEqual(['new']);
    const r = await rotateSessionKey(db, serviceKeyFileStore(home));
    const ids = JSON.parse(readFileSync(serviceKeyFilePath(home), 'utf8')).keys.map((k: { id: string }) => k.id);
    expect(ids).toEqual([r.keyId, 'new']);
  });
});

describe('externally supplied ring (JSON document)', () => {
  it('rotates a document and verifies across the rotation', async () => {
    const first = rotateKeyRingDocument(undefined);
    const ring1 = parseKeyRingDocument(first.document);
    expect(ring1.signing.id).toBe(first.keyId);
    const second = rotateKeyRingDocument(first.document);
    const ring2 = parseKeyRingDocument(second.document);
    expect(ring2.signing.id).toBe(second.keyId);
    expect(ring2.verifying.map((k) => k.id)).toEqual([second.keyId, first.keyId]);
    const sig = signWithRing(ring1, 'session', 'x');
    expect(verifyWithRing(ring2, 'session', 'x', sig)).toBe(true);
  });

  it('refuses a ring without an active key or with short secrets', () => {
    expect(() => parseKeyRingDocument('{"keys":[]}')).toThrow('no active key');
    expect(() =>
      parseKeyRingDocument(
        '{"keys":[{"id":"a","secret":"abcd","created_at":"2026-01-01T00:00:00Z","retired_at":null}]}',
      ),
    ).toThrow('256 bits');
    expect(() => parseKeyRingDocument('nope')).toThrow('not valid JSON');
  });

  it('caches loads and refreshes on demand', async () => {
    let doc = rotateKeyRingDocument(undefined).document;
    let loads = 0;
    const source = cachedKeyRingSource(
      documentKeyRingSource(async () => {
        loads++;
        return doc;
      }),
      60_000,
      0,
    );
    const a = await source.load();
    await source.load();
    expect(loads).toBe(1);
    doc = rotateKeyRingDocument(doc).document;
    const b = await source.refresh();
    expect(loads).toBe(2);
    expect(b.signing.id).not.toBe(a.signing.id);
  });
});

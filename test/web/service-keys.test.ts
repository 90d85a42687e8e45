import { beforeEach, describe, expect, it } from 'vitest';
import type { Db } from '../../service/db/schema';
import {
  cachedKeyRingSource,
  documentKeyRingSource,
  loadSessionKeyRing,
  parseKeyRingDocument,
  RETIRED_KEY_VERIFY_SECONDS,
  rotateKeyRingDocument,
  rotateSessionKey,
  signWithRing,
  verifyWithRing,
} from '../../service/domain/service-keys';
import { resetDatabase } from '../support/db';
import { useFixture } from '../oauth/support/harness';

const fixture = useFixture();
let db: Db;

describe('session key ring (service_keys)', () => {
  beforeEach(async () => {
    db = fixture.db;
    await resetDatabase(db);
  });

  it('creates the first key on demand, once, even when loaded concurrently', async () => {
    const rings = await Promise.all([loadSessionKeyRing(db), loadSessionKeyRing(db), loadSessionKeyRing(db)]);
    expect(new Set(rings.map((r) => r.signing.id)).size).toBe(1);
    const rows = await db.selectFrom('service_keys').select('id').execute();
    expect(rows).toHaveLength(1);
  });

  it('rotation: the new key signs, the old one still verifies (nobody is signed out)', async () => {
    const before = await loadSessionKeyRing(db);
    const sig = signWithRing(before, 'session', 'abc');
    const result = await rotateSessionKey(db, 'cli:test');
    expect(result).toMatchObject({ rotated: true, retired: 1, removed: 0 });
    const after = await loadSessionKeyRing(db);
    expect(after.signing.id).toBe(result.keyId);
    expect(after.signing.id).not.toBe(before.signing.id);
    expect(verifyWithRing(after, 'session', 'abc', sig)).toBe(true);
    expect(verifyWithRing(after, 'csrf', 'abc', sig)).toBe(false);
    expect(signWithRing(after, 'session', 'abc')).not.toBe(sig);
    const audit = await db.selectFrom('audit_events').select(['actor', 'action']).execute();
    expect(audit).toEqual([{ actor: 'cli:test', action: 'service_key.rotate' }]);
  });

  it('keys retired longer ago than the longest session age out and are deleted by the next rotation', async () => {
    await loadSessionKeyRing(db);
    const old = new Date(Date.now() - (RETIRED_KEY_VERIFY_SECONDS + 60) * 1000);
    await db.updateTable('service_keys').set({ retired_at: old }).execute();
    await db
      .insertInto('service_keys')
      .values({ purpose: 'session', secret: 'a'.repeat(64) })
      .execute();
    const ring = await loadSessionKeyRing(db);
    expect(ring.verifying).toHaveLength(1);
    const r = await rotateSessionKey(db);
    expect(r).toMatchObject({ retired: 1, removed: 1 });
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

// Random secrets come from a page of CSPRNG bytes handed out once each: every value is fresh, of
// the asked length, also across pages and for a request larger than a page.
import { describe, expect, it } from 'vitest';
import { randomHex } from '../../../service/domain/secrets';

describe('randomHex', () => {
  it('gives 256-bit lowercase hex values, none repeated over many pages', () => {
    const values = Array.from({ length: 1000 }, () => randomHex());
    for (const v of values) expect(v).toMatch(/^[0-9a-f]{64}$/);
    expect(new Set(values).size).toBe(1000);
  });

  it('gives the asked number of bytes, across a page boundary and beyond a page', () => {
    const mixed = Array.from({ length: 300 }, (_, i) => randomHex(1 + (i % 61)));
    expect(mixed.map((v) => v.length)).toEqual(mixed.map((_, i) => 2 * (1 + (i % 61))));
    const big = randomHex(10_000);
    expect(big).toMatch(/^[0-9a-f]{20000}$/);
    // No slice of a page is handed out twice: the 32-byte values share no 8-byte window.
    const seen = new Set<string>();
    for (const v of Array.from({ length: 500 }, () => randomHex())) {
      for (let i = 0; i + 16 <= 64; i += 16) {
        const window = v.slice(i, i + 16);
        expect(seen.has(window)).toBe(false);
        seen.add(window);
      }
    }
  });
});

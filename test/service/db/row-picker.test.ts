// rowPicker (service/db/row-picker.ts): some of a row's columns as a new object, with a prefix,
// in the list's order; absent columns and an undefined row read null; __proto__ is refused.
import { describe, expect, it } from 'vitest';
import { rowPicker } from '../../../service/db/row-picker';

describe('rowPicker', () => {
  it("copies the listed columns, in the list's order, and nothing else", () => {
    const pick = rowPicker<Record<string, unknown>>(['name', 'id']);
    const picked = pick({ id: 7, name: 'Ada', secret_digest: 'x', extra: true });
    expect(Object.entries(picked)).toEqual([
      ['name', 'Ada'],
      ['id', 7],
    ]);
    expect(Object.getPrototypeOf(picked)).toBe(Object.prototype);
  });

  it('reads each column under a prefix; an absent or undefined column and an undefined row read null', () => {
    const pick = rowPicker<Record<string, unknown>>(['id', 'uid', 'note'], 'client_');
    expect(pick({ id: 1, client_id: 2, client_uid: 'abc', client_note: undefined })).toEqual({
      id: 2,
      uid: 'abc',
      note: null,
    });
    expect(pick(undefined)).toEqual({ id: null, uid: null, note: null });
  });

  it('keeps false, 0 and empty values, and names with quotes as they are', () => {
    const pick = rowPicker<Record<string, unknown>>(['a"b', 'zero', 'no', 'empty']);
    expect(pick({ 'a"b': 'q', zero: 0, no: false, empty: '' })).toEqual({ 'a"b': 'q', zero: 0, no: false, empty: '' });
  });

  it('refuses a column named __proto__', () => {
    expect(() => rowPicker(['id', '__proto__'])).toThrow('rowPicker: a column named __proto__');
  });
});

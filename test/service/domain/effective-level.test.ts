// effectiveLevel (the notifications page) reads a chain as the recipients engine does: the nearest
// non-global level, else the user's global level — and a global level of `global` is participating.
import { describe, expect, it } from 'vitest';
import { effectiveLevel } from '../../../service/domain/notification-settings';

describe('effectiveLevel', () => {
  it('takes the nearest level that is not global, and says where it comes from', () => {
    const chain = [
      { level: 'global' as const, source: 'project' },
      { level: 'disabled' as const, source: 'group platform' },
      { level: 'watch' as const, source: 'group root' },
    ];
    expect(effectiveLevel(chain, 'mention')).toEqual({ level: 'disabled', from: 'group platform' });
  });

  it('falls back to the global level; a global level of global is participating (as recipients resolve it)', () => {
    expect(effectiveLevel([{ level: 'global' as const, source: 'project' }], 'watch')).toEqual({
      level: 'watch',
      from: 'global',
    });
    expect(effectiveLevel([{ level: 'global' as const, source: 'project' }], 'global')).toEqual({
      level: 'participating',
      from: 'global',
    });
  });
});

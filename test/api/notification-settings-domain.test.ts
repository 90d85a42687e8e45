// The notification-settings domain functions on their own (what the admin CLI would call): the
// parsing rules, the e-mail check and the upsert, without HTTP.
import { beforeAll, describe, expect, it } from 'vitest';
import type { Db, User } from '../../service/db/schema';
import { DomainError } from '../../service/domain/errors';
import {
  getNotificationSettings,
  NOTIFICATION_LEVELS,
  parseNotificationSettingsUpdate,
  updateNotificationSettings,
} from '../../service/domain/notifications/settings';
import { addUserEmail } from '../../service/domain/users';
import { createGroup, makeUser } from '../support/api-fixtures';
import { createTestDatabase } from '../support/db';

let db: Db;
let alice: User;

beforeAll(async () => {
  db = (await createTestDatabase()).db;
  alice = await makeUser(db, 'alice');
  await addUserEmail(db, 'alice', 'Alice.Work@example.com');
});

describe('parsing', () => {
  it("knows GitLab's six levels", () => {
    expect(NOTIFICATION_LEVELS).toEqual(['disabled', 'participating', 'watch', 'global', 'mention', 'custom']);
    const levelOf = (level: unknown) => parseNotificationSettingsUpdate({ level }, { kind: 'global' }).level;
    for (const level of NOTIFICATION_LEVELS) expect(levelOf(level)).toBe(level);
    expect(() => levelOf('x')).toThrow("'x' is not a valid level");
    expect(() => levelOf(null)).toThrow(DomainError);
  });

  it("coerces flags as GitLab's Grape (true/false/1/0, yes/no, on/off, t/f …) and names the first bad one", () => {
    expect(
      parseNotificationSettingsUpdate(
        { new_note: 'true', new_issue: 0, close_issue: '1', level: 'custom', other: 'ignored' },
        { kind: 'global' },
      ),
    ).toEqual({
      level: 'custom',
      events: { new_note: true, new_issue: false, close_issue: true },
    });
    expect(
      parseNotificationSettingsUpdate({ new_note: 'yes', new_issue: 'OFF', close_issue: 'TRUE' }, { kind: 'global' }),
    ).toEqual({ events: { new_note: true, new_issue: false, close_issue: true } });
    for (const bad of ['yess', 'tRUE', ' true', '', null, 2, [true], {}]) {
      const err = (() => {
        try {
          parseNotificationSettingsUpdate({ level: 'bogus', reopen_issue: bad }, { kind: 'global' });
        } catch (e) {
          return e;
        }
      })();
      expect(err).toBeInstanceOf(DomainError);
      expect((err as DomainError).message).toBe('reopen_issue is invalid');
      expect((err as DomainError).kind).toBe('invalid');
      // GitLab's shape for a bad parameter, {"error": …}, carried by the error itself.
      expect((err as DomainError).key).toBe('error');
    }
  });

  it('reads notification_email for the global and group settings (contract §4), not a project; blank resets', () => {
    expect(parseNotificationSettingsUpdate({ notification_email: ' a@example.com ' }, { kind: 'global' })).toEqual({
      events: {},
      notificationEmail: 'a@example.com',
    });
    expect(parseNotificationSettingsUpdate({ notification_email: '' }, { kind: 'global' })).toEqual({
      events: {},
      notificationEmail: null,
    });
    expect(parseNotificationSettingsUpdate({ notification_email: 'a@example.com' }, { kind: 'group', id: 1 })).toEqual({
      events: {},
      notificationEmail: 'a@example.com',
    });
    expect(parseNotificationSettingsUpdate({ notification_email: '' }, { kind: 'group', id: 1 })).toEqual({
      events: {},
      notificationEmail: null,
    });
    expect(
      parseNotificationSettingsUpdate({ notification_email: 'a@example.com' }, { kind: 'project', id: 1 }),
    ).toEqual({ events: {} });
    expect(() => parseNotificationSettingsUpdate({ notification_email: 5 }, { kind: 'global' })).toThrow(
      'notification_email is invalid',
    );
  });
});

describe('get and update', () => {
  it('defaults, then upserts only what is given', async () => {
    expect(await getNotificationSettings(db, alice, { kind: 'global' })).toEqual({
      level: 'participating',
      notification_email: 'alice@example.com',
    });
    const group = await createGroup(db, { path: 'g' });
    const source = { kind: 'group', id: group.id } as const;
    expect(await getNotificationSettings(db, alice, source)).toEqual({ level: 'global' });
    await updateNotificationSettings(db, alice, source, { events: { new_note: true } });
    expect(await getNotificationSettings(db, alice, source)).toEqual({ level: 'global' });
    expect(await updateNotificationSettings(db, alice, source, { level: 'custom', events: {} })).toMatchObject({
      level: 'custom',
      events: { new_note: true, new_issue: false },
    });
  });

  it('stores a verified e-mail as registered (case-insensitive match) and refuses others with the field error', async () => {
    expect(
      await updateNotificationSettings(
        db,
        alice,
        { kind: 'global' },
        { notificationEmail: 'alice.work@EXAMPLE.com', events: {} },
      ),
    ).toEqual({
      level: 'participating',
      notification_email: 'Alice.Work@example.com',
    });
    const err = await updateNotificationSettings(
      db,
      alice,
      { kind: 'global' },
      { level: 'watch', notificationEmail: 'x@example.com', events: {} },
    ).catch((e) => e);
    expect(err).toBeInstanceOf(DomainError);
    expect(err.details).toEqual({ notification_email: ['must be an email you have verified'] });
    expect((await getNotificationSettings(db, alice, { kind: 'global' })).level).toBe('participating');
    await expect(
      updateNotificationSettings(db, alice, { kind: 'project', id: 1 }, { notificationEmail: 'a@b.c', events: {} }),
    ).rejects.toThrow(DomainError);
  });
});

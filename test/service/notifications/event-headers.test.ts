// The intake sends each recipient's headers as JSON text composed from a part shared per reason
// (messages.ts, headersJson): it must be exactly the JSON of the headers object the one rule
// builds (notificationHeaders), for every reason, on projects (one-click unsubscribe) and groups.
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { eventMessages, type EventMessageContext } from '../../../service/domain/notifications/messages';
import { parseKeyRingDocument, rotateKeyRingDocument } from '../../../service/domain/service-keys';

const ring = parseKeyRingDocument(rotateKeyRingDocument(undefined).document);
const settings = { publicUrl: 'https://id.example.org', from: 'Lanyard <noreply@id.example.org>' };
const context = (type: 'project' | 'group'): EventMessageContext => ({
  eventId: 41,
  event: 'new_issue',
  scope: { type, id: 7, name: 'API "core" \\ team', fullPath: 'acme/api' },
  target: { type: 'issue', ref: 12, title: 'Crash on login', url: 'https://code.example.org/acme/api/-/issues/12' },
  authorName: 'Ada',
  summary: null,
});

describe('headersJson', () => {
  // The unsubscribe token carries its expiry: both calls must see the same second.
  beforeEach(() => vi.useFakeTimers({ now: new Date('2026-11-27T01:59:59.999Z'), toFake: ['Date'] }));
  afterEach(() => vi.useRealTimers());
  for (const type of ['project', 'group'] as const) {
    it(`is JSON.stringify of headers() for every reason (${type})`, () => {
      const messages = eventMessages(settings, context(type), ring);
      for (const [i, reason] of (['watching', 'mentioned', 'participating', 'custom', 'watching'] as const).entries()) {
        const recipient = { user_id: 100 + i, email: `u${i}@example.com`, reason };
        const json = messages.headersJson(recipient);
        expect(json).toBe(JSON.stringify(messages.headers(recipient)));
        expect(JSON.parse(json)['X-GitLab-NotificationReason']).toBe(reason);
        expect('List-Unsubscribe' in JSON.parse(json)).toBe(type === 'project');
      }
    });
  }
});

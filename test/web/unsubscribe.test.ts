// One-click unsubscribe (RFC 8058) through the real app on real PostgreSQL: the POST exactly as a
// mail client sends it (no cookies, no Origin, no CSRF token, form-urlencoded or multipart), the GET
// that changes nothing, the undo, and every way a token can be wrong.
import { createHmac } from 'node:crypto';
import { beforeEach, describe, expect, it } from 'vitest';
import type { Project, User } from '../../service/db/schema';
import { createGroup, createProject } from '../../service/domain/namespaces';
import {
  readUnsubscribeToken,
  unsubscribeHeaders,
  unsubscribeToken,
} from '../../service/domain/notifications/unsubscribe';
import { parseKeyRingDocument, rotateKeyRingDocument } from '../../service/domain/service-keys';
import { resetDatabase } from '../support/db';
import { testKeyRing } from '../support/app';
import { WebClient } from '../oauth/support/browser-like';
import { makeUser, PASSWORD, useFixture } from '../oauth/support/harness';

const f = useFixture();
let alice: User;
let bob: User;
let project: Project;
let other: Project;

beforeEach(async () => {
  await resetDatabase(f.db);
  alice = (await makeUser(f.db, 'alice')).user;
  bob = (await makeUser(f.db, 'bob')).user;
  await createGroup(f.db, { path: 'acme', visibility: 'public' });
  project = await createProject(f.db, { path: 'acme/rocket', name: 'Rocket', visibility: 'public' });
  other = await createProject(f.db, { path: 'acme/other', name: 'Other', visibility: 'public' });
});

const tokenFor = async (userId: number, projectId: number, now?: Date) =>
  unsubscribeToken(await testKeyRing(), userId, projectId, now);

/** The POST of RFC 8058 §8, byte for byte what a mail client sends: nothing else. */
const oneClick = (
  token: string,
  body = 'List-Unsubscribe=One-Click',
  contentType = 'application/x-www-form-urlencoded',
) =>
  f.app.inject({
    method: 'POST',
    url: `/-/unsubscribe/${token}`,
    headers: { 'content-type': contentType, 'content-length': String(Buffer.byteLength(body)) },
    payload: body,
  });

const levelOf = async (userId: number, projectId: number) =>
  (
    await f.db
      .selectFrom('notification_settings')
      .select('level')
      .where('user_id', '=', userId)
      .where('project_id', '=', projectId)
      .executeTakeFirst()
  )?.level;

const auditRows = () =>
  f.db
    .selectFrom('audit_events')
    .select(['actor', 'action', 'target_type', 'target_id', 'details', 'ip_address'])
    .where('action', '=', 'notification_settings.update')
    .orderBy('id')
    .execute();

describe('the List-Unsubscribe headers', () => {
  it('name an HTTPS URL on PUBLIC_URL with the token, and the One-Click POST', async () => {
    const ring = await testKeyRing();
    const headers = unsubscribeHeaders({ publicUrl: 'https://lanyard.example' }, ring, alice.id, project.id);
    expect(Object.keys(headers)).toEqual(['List-Unsubscribe', 'List-Unsubscribe-Post']);
    expect(headers['List-Unsubscribe-Post']).toBe('List-Unsubscribe=One-Click');
    const m = /^<https:\/\/lanyard\.example\/-\/unsubscribe\/([^>]+)>$/.exec(headers['List-Unsubscribe']);
    expect(m).not.toBeNull();
    expect(m![1]).toMatch(new RegExp(`^${alice.id}\\.${project.id}\\.\\d+\\.[A-Za-z0-9_-]{43}$`));
  });
});

describe('POST /-/unsubscribe/:token as a mail client sends it', () => {
  it('sets the level for that project to disabled, answers 200 without a redirect, audited as the settings page', async () => {
    const res = await oneClick(await tokenFor(alice.id, project.id));
    expect(res.statusCode).toBe(200);
    expect(res.headers.location).toBeUndefined();
    expect(res.headers['content-type']).toBe('text/html; charset=utf-8');
    expect(res.headers['cache-control']).toBe('no-store');
    expect(res.headers['set-cookie']).toBeUndefined();
    expect(res.body).toContain('You will no longer get notification e-mails about acme/rocket.');
    expect(await levelOf(alice.id, project.id)).toBe('disabled');
    expect(await levelOf(alice.id, other.id)).toBeUndefined();
    expect(await levelOf(bob.id, project.id)).toBeUndefined();
    const [unsubscribed] = await auditRows();

    // The same change on the account page: the same audit event.
    const web = new WebClient(f.app);
    await web.signIn('bob', PASSWORD);
    const csrf = WebClient.csrf((await web.get('/-/profile/notifications')).body);
    const saved = await web.post(`/-/profile/notifications/projects/${project.id}`, {
      authenticity_token: csrf,
      level: 'disabled',
    });
    expect(saved.statusCode).toBe(303);
    const [, fromPage] = await auditRows();
    expect(unsubscribed).toEqual({ ...fromPage, actor: 'user:alice' });
    expect(fromPage).toEqual({
      actor: 'user:bob',
      action: 'notification_settings.update',
      target_type: 'project',
      target_id: String(project.id),
      details: { level: 'disabled' },
      ip_address: '127.0.0.1',
    });
  });

  it('accepts multipart/form-data too (RFC 8058 §3.2)', async () => {
    const body = '--XyZ\r\nContent-Disposition: form-data; name="List-Unsubscribe"\r\n\r\nOne-Click\r\n--XyZ--\r\n';
    const res = await oneClick(await tokenFor(alice.id, project.id), body, 'multipart/form-data; boundary=XyZ');
    expect(res.statusCode).toBe(200);
    expect(await levelOf(alice.id, project.id)).toBe('disabled');
  });

  it('a body other than List-Unsubscribe=One-Click → 400 page, nothing changed', async () => {
    const token = await tokenFor(alice.id, project.id);
    for (const body of ['', 'List-Unsubscribe=Yes', 'unsubscribe=1']) {
      const res = await oneClick(token, body);
      expect(res.statusCode).toBe(400);
      expect(res.headers['content-type']).toBe('text/html; charset=utf-8');
      expect(res.body).toContain('<h1>Unsubscribe request not complete</h1>');
      expect(res.body).toContain(
        'Nothing was changed. Open the unsubscribe link in the e-mail again and select Unsubscribe. (Mail programs send List-Unsubscribe=One-Click.)',
      );
    }
    expect(await levelOf(alice.id, project.id)).toBeUndefined();
    expect(await auditRows()).toEqual([]);
  });

  it('forged, tampered, cross-user, cross-project and expired tokens → 4xx page, nothing changed', async () => {
    const good = await tokenFor(alice.id, project.id);
    const [u, p, exp, mac] = good.split('.');
    const flip = (s: string) => (s[0] === 'A' ? 'B' : 'A') + s.slice(1);
    const foreignKey = createHmac('sha256', Buffer.alloc(32, 7))
      .update(`unsubscribe\0${u}.${p}.${exp}`)
      .digest('base64url');
    const cases: Array<[string, number]> = [
      [`${bob.id}.${p}.${exp}.${mac}`, 404], // the signature names alice
      [`${u}.${other.id}.${exp}.${mac}`, 404], // … and that project
      [`${u}.${p}.${Number(exp) + 1}.${mac}`, 404], // a longer life
      [`${u}.${p}.${exp}.${flip(mac)}`, 404],
      [`${u}.${p}.${exp}.${foreignKey}`, 404], // signed with a key Lanyard never had
      [`${u}.${p}.${exp}`, 404],
      ['not-a-token', 404],
      [await tokenFor(alice.id, project.id, new Date(Date.now() - 61 * 24 * 3600 * 1000)), 410],
    ];
    for (const [token, status] of cases) {
      const res = await oneClick(token);
      expect([token, res.statusCode]).toEqual([token, status]);
      expect(res.headers['content-type']).toBe('text/html; charset=utf-8');
      expect(res.body).toContain(status === 410 ? 'This unsubscribe link has expired.' : 'is not valid');
      const get = await f.app.inject({ method: 'GET', url: `/-/unsubscribe/${token}` });
      expect(get.statusCode).toBe(status);
    }
    expect(await levelOf(alice.id, project.id)).toBeUndefined();
    expect(await levelOf(bob.id, project.id)).toBeUndefined();
    expect(await auditRows()).toEqual([]);
  });

  it('a project deleted since → 404 page', async () => {
    const token = await tokenFor(alice.id, project.id);
    await f.db.deleteFrom('projects').where('id', '=', project.id).execute();
    expect((await oneClick(token)).statusCode).toBe(404);
  });
});

describe('GET /-/unsubscribe/:token', () => {
  it('changes nothing: shows the project and a button that posts the one-click body', async () => {
    const token = await tokenFor(alice.id, project.id);
    const auditBefore = await f.db.selectFrom('audit_events').select('id').execute();
    for (let i = 0; i < 3; i++) {
      const res = await f.app.inject({ method: 'GET', url: `/-/unsubscribe/${token}` });
      expect(res.statusCode).toBe(200);
      expect(res.body).toContain('<strong id="project-name">Rocket</strong>');
      expect(res.body).toContain(`<form method="post" action="/-/unsubscribe/${token}">`);
      expect(res.body).toContain('<input type="hidden" name="List-Unsubscribe" value="One-Click">');
      expect(res.body).toContain('Your notification level for this project: Global (your default).');
    }
    expect(await levelOf(alice.id, project.id)).toBeUndefined();
    expect(await f.db.selectFrom('audit_events').select('id').execute()).toEqual(auditBefore);
  });
});

describe('undo', () => {
  const undoTokenOf = (html: string) => /name="undo_token" value="([^"]+)"/.exec(html)![1];
  const undo = (token: string, headers: Record<string, string> = {}) =>
    f.app.inject({
      method: 'POST',
      url: '/-/unsubscribe/undo',
      headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers },
      payload: `undo_token=${encodeURIComponent(token)}`,
    });

  it('restores the previous level (custom flags kept), audited; a replay changes nothing more', async () => {
    await f.db
      .insertInto('notification_settings')
      .values({ user_id: alice.id, project_id: project.id, level: 'custom', new_issue: true })
      .execute();
    const res = await oneClick(await tokenFor(alice.id, project.id));
    expect(res.body).toContain('Undo restores your previous level: Custom.');
    const token = undoTokenOf(res.body);
    expect(token).toMatch(new RegExp(`^${alice.id}\\.${project.id}\\.custom\\.\\d+\\.[A-Za-z0-9_-]{43}$`));

    const restored = await undo(token);
    expect(restored.statusCode).toBe(200);
    expect(restored.body).toContain('Your notification level for acme/rocket is Custom again.');
    const row = await f.db
      .selectFrom('notification_settings')
      .select(['level', 'new_issue'])
      .where('user_id', '=', alice.id)
      .where('project_id', '=', project.id)
      .executeTakeFirstOrThrow();
    expect(row).toEqual({ level: 'custom', new_issue: true });
    expect((await auditRows()).map((a) => [a.actor, a.details])).toEqual([
      ['user:alice', { level: 'disabled' }],
      ['user:alice', { level: 'custom' }],
    ]);

    // The person then chooses Watch on the settings page; the old undo must not override it.
    await f.db
      .updateTable('notification_settings')
      .set({ level: 'watch' })
      .where('user_id', '=', alice.id)
      .where('project_id', '=', project.id)
      .execute();
    const replay = await undo(token);
    expect(replay.statusCode).toBe(409);
    expect(replay.body).toContain('was changed since');
    expect(await levelOf(alice.id, project.id)).toBe('watch');
    expect(await auditRows()).toHaveLength(2);
  });

  it('a second one-click (the page reloaded) changes nothing and offers no undo; the first undo still restores', async () => {
    await f.db
      .insertInto('notification_settings')
      .values({ user_id: alice.id, project_id: project.id, level: 'watch' })
      .execute();
    const token = await tokenFor(alice.id, project.id);
    const first = await oneClick(token);
    const firstUndo = undoTokenOf(first.body);

    const again = await oneClick(token);
    expect(again.statusCode).toBe(200);
    expect(again.headers.location).toBeUndefined();
    expect(again.body).toContain('<h1>Already unsubscribed</h1>');
    expect(again.body).toContain('You already get no notification e-mails about acme/rocket. Nothing was changed.');
    expect(again.body).not.toContain('undo_token');
    expect(await levelOf(alice.id, project.id)).toBe('disabled');
    expect((await auditRows()).map((a) => a.details)).toEqual([{ level: 'disabled' }]);

    const restored = await undo(firstUndo);
    expect(restored.statusCode).toBe(200);
    expect(restored.body).toContain('Your notification level for acme/rocket is Watch again.');
    expect(await levelOf(alice.id, project.id)).toBe('watch');
  });

  it('refuses a tampered undo token (another level, user or project), a cross-site form and an unsubscribe token', async () => {
    const res = await oneClick(await tokenFor(alice.id, project.id));
    const token = undoTokenOf(res.body);
    const [u, p, level, exp, mac] = token.split('.');
    expect(level).toBe('global');
    for (const forged of [
      `${u}.${p}.watch.${exp}.${mac}`,
      `${bob.id}.${p}.${level}.${exp}.${mac}`,
      `${u}.${other.id}.${level}.${exp}.${mac}`,
      await tokenFor(alice.id, project.id),
      '',
    ]) {
      const r = await undo(forged);
      expect([forged, r.statusCode]).toEqual([forged, 404]);
    }
    const cross = await undo(token, { origin: 'https://evil.example' });
    expect(cross.statusCode).toBe(403);
    expect(await levelOf(alice.id, project.id)).toBe('disabled');
    // The real one still works.
    expect((await undo(token, { origin: 'http://localhost:80' })).statusCode).toBe(200);
    expect(await levelOf(alice.id, project.id)).toBe('global');
  });
});

describe('key rotation', () => {
  it('a token signed before a rotation verifies for 8 days after it, then not', async () => {
    const t0 = new Date('2026-11-01T00:00:00Z');
    const first = rotateKeyRingDocument(undefined, t0);
    const token = unsubscribeToken(parseKeyRingDocument(first.document, t0), alice.id, project.id, t0);
    const rotatedAt = new Date('2026-11-10T00:00:00Z');
    const second = rotateKeyRingDocument(first.document, rotatedAt);
    const at = (days: number) => new Date(rotatedAt.getTime() + days * 86400_000);
    const read = (now: Date) => readUnsubscribeToken(f.db, parseKeyRingDocument(second.document, now), token, now);
    expect(await read(at(0))).toMatchObject({ ok: true, project: { id: project.id }, user: { id: alice.id } });
    expect(await read(at(7.9))).toMatchObject({ ok: true });
    expect(await read(at(8.1))).toEqual({ ok: false, reason: 'invalid' });
    // A new token is signed by the new key and lives its full 60 days.
    const fresh = unsubscribeToken(parseKeyRingDocument(second.document, rotatedAt), alice.id, project.id, rotatedAt);
    expect(await read(at(59))).toEqual({ ok: false, reason: 'invalid' });
    const readFresh = (now: Date) => readUnsubscribeToken(f.db, parseKeyRingDocument(second.document, now), fresh, now);
    expect(await readFresh(at(59))).toMatchObject({ ok: true });
    expect(await readFresh(at(60))).toEqual({ ok: false, reason: 'expired' });
  });
});

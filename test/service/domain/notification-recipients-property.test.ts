// Property test (fast-check): on random group trees (depth ≤ 6) with random memberships, settings,
// group-level e-mails and requests, the SQL engine returns exactly what the in-memory reference
// implementation of the same rules (test/support/recipients-reference.ts) returns.
import fc from 'fast-check';
import { beforeAll, expect, it } from 'vitest';
import type { Db } from '../../../service/db/schema';
import { NOTIFICATION_EVENTS } from '../../../service/db/schema';
import { explainRecipient } from '../../../service/domain/notifications/explain';
import { resolveRecipients, type RecipientTarget } from '../../../service/domain/notifications/recipients';
import { createTestDatabase, resetDatabase } from '../../support/db';
import { referenceRecipients, type Level } from '../../support/recipients-reference';
import { insertWorld, type WorldSpec } from '../../support/recipients-world';

let db: Db;

beforeAll(async () => {
  db = (await createTestDatabase()).db;
});

const LEVELS: Level[] = ['disabled', 'participating', 'watch', 'global', 'mention', 'custom'];
const VISIBILITIES = ['private', 'internal', 'public'];
const SPECIAL_EVENTS = [
  'failed_pipeline',
  'fixed_pipeline',
  'success_pipeline',
  'moved_project',
  'push_to_merge_request',
  'issue_due',
].filter((e) => (NOTIFICATION_EVENTS as readonly string[]).includes(e)) as (typeof NOTIFICATION_EVENTS)[number][];

/** A random world: groups whose parent is an earlier group (depth kept ≤ 6), one or two projects. */
const worldArb = fc
  .record({
    groups: fc.array(
      fc.record({ parent: fc.nat(), root: fc.boolean(), visibility: fc.constantFrom(...VISIBILITIES) }),
      {
        minLength: 1,
        maxLength: 8,
      },
    ),
    projects: fc.array(fc.record({ group: fc.nat(), visibility: fc.constantFrom(...VISIBILITIES) }), {
      minLength: 1,
      maxLength: 2,
    }),
    users: fc.array(fc.record({ blocked: fc.boolean(), admin: fc.boolean() }), {
      minLength: 1,
      maxLength: 6,
    }),
    members: fc.array(fc.record({ user: fc.nat(), onProject: fc.boolean(), source: fc.nat() }), { maxLength: 12 }),
    settings: fc.array(
      fc.record({
        user: fc.nat(),
        where: fc.constantFrom('global', 'group', 'group', 'project'),
        source: fc.nat(),
        level: fc.constantFrom(...LEVELS),
        email: fc.boolean(),
        flags: fc.subarray([...NOTIFICATION_EVENTS]),
      }),
      { maxLength: 24 },
    ),
    // The events with their own rules come up as often as all the others together.
    event: fc.oneof(fc.constantFrom(...NOTIFICATION_EVENTS), fc.constantFrom(...SPECIAL_EVENTS)),
    author: fc.option(fc.nat(), { nil: null }),
    participants: fc.uniqueArray(fc.nat(5), { maxLength: 3 }),
    mentioned: fc.uniqueArray(fc.nat(5), { maxLength: 2 }),
    onGroup: fc.boolean(),
  })
  .map((r) => {
    const depth: number[] = [];
    const groups = r.groups.map((g, i) => {
      let parent: number | null = i === 0 || g.root ? null : g.parent % i;
      if (parent !== null && depth[parent] >= 6) parent = null;
      depth.push(parent === null ? 1 : depth[parent] + 1);
      return { parent, visibility: g.visibility };
    });
    const nUsers = r.users.length;
    const spec: WorldSpec = {
      groups,
      projects: r.projects.map((p) => ({ group: p.group % groups.length, visibility: p.visibility })),
      users: r.users,
      members: r.members.map((m) =>
        m.onProject
          ? { user: m.user % nUsers, project: m.source % r.projects.length }
          : { user: m.user % nUsers, group: m.source % groups.length },
      ),
      settings: r.settings.map((s, i) => ({
        user: s.user % nUsers,
        ...(s.where === 'group' ? { group: s.source % groups.length } : {}),
        ...(s.where === 'project' ? { project: s.source % r.projects.length } : {}),
        // A global row never says `global`: GitLab's global setting has a real level.
        level: s.where === 'global' && s.level === 'global' ? 'watch' : s.level,
        email: s.email && s.where !== 'project' ? `alias${i}@example.org` : null,
        flags: Object.fromEntries(s.flags.map((f) => [f, true])),
      })),
    };
    return { spec, r, nUsers };
  });

type WorldSample = typeof worldArb extends fc.Arbitrary<infer T> ? T : never;

/** The world of one sample in the database, and the target and request it names. */
async function sample({ spec, r, nUsers }: WorldSample) {
  await resetDatabase(db);
  const world = await insertWorld(db, spec);
  const ids = (list: number[]) => [...new Set(list.filter((i) => i < nUsers).map((i) => world.users[i].id))];
  // Named users must be active (blocked ones are refused, tested elsewhere).
  const active = (list: number[]) => ids(list).filter((id) => !world.users.find((u) => u.id === id)?.blocked);
  const author = r.author === null || world.users[r.author % nUsers].blocked ? null : world.users[r.author % nUsers].id;
  const request = {
    event: r.event,
    authorId: author,
    participantIds: active(r.participants),
    mentionedIds: active(r.mentioned),
  };
  const project = world.projects[0];
  const target: RecipientTarget = r.onGroup
    ? {
        kind: 'group',
        group: {
          id: world.groups[0].id,
          full_path: world.groups[0].fullPath,
          visibility: world.groups[0].visibility as 'private',
        },
      }
    : {
        kind: 'project',
        project: {
          id: project.id,
          group_id: project.groupId,
          path_with_namespace: project.path,
          visibility: project.visibility as 'private',
        },
      };
  return { world, project, target, request };
}

it('the SQL engine agrees with the reference model on random trees', async () => {
  await fc.assert(
    fc.asyncProperty(worldArb, async ({ spec, r, nUsers }) => {
      const { world, project, target, request } = await sample({ spec, r, nUsers });
      const actual = await resolveRecipients(db, target, request);
      const expected = referenceRecipients(
        world,
        r.onGroup ? { type: 'group', id: world.groups[0].id } : { type: 'project', id: project.id },
        request,
      );
      expect(actual).toEqual(expected);
    }),
    { numRuns: 200 },
  );
}, 120_000);

// `notify explain` narrates the decision with the TS forms of the rules (levelAllows, the holder
// and access checks) while its verdict comes from the SQL engine: the narration must agree with the
// verdict for every user, or the explanation would contradict its own result.
it("notify explain's step-by-step rules agree with the SQL engine's verdict for every user", async () => {
  await fc.assert(
    fc.asyncProperty(worldArb, async ({ spec, r, nUsers }) => {
      const { world, target, request } = await sample({ spec, r, nUsers });
      for (const u of world.users) {
        const user = {
          id: u.id,
          username: u.username,
          email: u.email,
          state: u.blocked ? ('blocked' as const) : ('active' as const),
          is_admin: u.admin,
        };
        const { steps, recipient } = await explainRecipient(db, target, request, user);
        const detail = (step: string) => steps.filter((s) => s.step === step).map((s) => s.detail);
        const narrated =
          detail('state')[0] === 'active' &&
          !detail('access')[0].endsWith('never notified') &&
          detail('own activity')[0] === 'not the author' &&
          detail('level rule').some((d) => d.includes(' lets '));
        expect({ user: u.username, notified: narrated }).toEqual({ user: u.username, notified: recipient !== null });
      }
    }),
    { numRuns: 60 },
  );
}, 120_000);

// A small in-memory reference implementation of the notification recipient rules (contract §4),
// written straight from the wording and independent of the SQL engine: the property test
// checks that both give exactly the same answer on random group trees.
export type Level = 'disabled' | 'participating' | 'watch' | 'global' | 'mention' | 'custom';
export type Where = { type: 'global' } | { type: 'group'; id: number } | { type: 'project'; id: number };

export interface World {
  groups: { id: number; parentId: number | null; fullPath: string; visibility: string }[];
  projects: { id: number; groupId: number; path: string; visibility: string }[];
  users: { id: number; username: string; email: string; blocked: boolean; admin: boolean }[];
  members: { userId: number; groupId?: number; projectId?: number }[];
  settings: { userId: number; where: Where; level: Level; email: string | null; flags: Record<string, boolean> }[];
}

export interface RefRecipient {
  user_id: number;
  username: string;
  email: string;
  reason: string;
  level: string;
  source: { type: string; id: number | null; full_path: string | null };
}

export interface RefRequest {
  event: string;
  authorId: number | null;
  participantIds: number[];
  mentionedIds: number[];
}

const WATCH_EXCLUDED = ['push_to_merge_request', 'issue_due', 'success_pipeline'];
const PARTICIPATING_ALSO = ['failed_pipeline', 'fixed_pipeline', 'moved_project'];

export function referenceRecipients(
  world: World,
  target: { type: 'project' | 'group'; id: number },
  req: RefRequest,
): RefRecipient[] {
  const project = target.type === 'project' ? world.projects.find((p) => p.id === target.id) : undefined;
  const start = project ? project.groupId : target.id;
  const ancestors: World['groups'] = [];
  let parent: number | null = start;
  for (let g = world.groups.find((x) => x.id === parent); g; g = world.groups.find((x) => x.id === parent)) {
    ancestors.push(g);
    parent = g.parentId;
  }
  // Sources nearest first: the project, then the groups up to the root.
  const sources: { type: 'project' | 'group'; id: number; fullPath: string }[] = [
    ...(project ? [{ type: 'project' as const, id: project.id, fullPath: project.path }] : []),
    ...ancestors.map((g) => ({ type: 'group' as const, id: g.id, fullPath: g.fullPath })),
  ];
  const visibility = project ? project.visibility : ancestors[0].visibility;
  const settingAt = (userId: number, where: Where) =>
    world.settings.find(
      (s) =>
        s.userId === userId &&
        s.where.type === where.type &&
        (where.type === 'global' || (s.where as { id: number }).id === where.id),
    );
  const isMemberOf = (userId: number, src: { type: string; id: number }) =>
    world.members.some(
      (m) => m.userId === userId && (src.type === 'project' ? m.projectId === src.id : m.groupId === src.id),
    );
  const globalLevel = (userId: number): Level => {
    const l = settingAt(userId, { type: 'global' })?.level;
    return l === undefined || l === 'global' ? 'participating' : l;
  };

  const flagOf = (s: World['settings'][number] | undefined) => {
    if (!s) return false;
    if (req.event === 'fixed_pipeline') return !!s.flags.fixed_pipeline || !!s.flags.success_pipeline;
    return !!s.flags[req.event];
  };

  // Candidates: [userId, kind]
  const candidates: [number, 'mention' | 'participating' | 'watch'][] = [];
  for (const id of req.mentionedIds) candidates.push([id, 'mention']);
  for (const id of req.participantIds) candidates.push([id, 'participating']);
  for (const u of world.users) {
    const holds = sources.some((src) => {
      const s = settingAt(u.id, src);
      const l: Level | undefined = s ? s.level : isMemberOf(u.id, src) ? 'global' : undefined;
      if (l === 'watch' || l === 'custom') return true;
      return l === 'global' && ['watch', 'custom'].includes(settingAt(u.id, { type: 'global' })?.level ?? '');
    });
    if (holds) candidates.push([u.id, 'watch']);
  }

  const out: RefRecipient[] = [];
  for (const user of [...world.users].sort((a, b) => a.id - b.id)) {
    const mine = candidates.filter(([id]) => id === user.id).map(([, k]) => k);
    if (mine.length === 0 || user.blocked || user.id === req.authorId) continue;
    const canSee = visibility !== 'private' || user.admin || sources.some((src) => isMemberOf(user.id, src));
    if (!canSee) continue;
    // Effective level: nearest non-global source, else the global setting, else participating.
    let level: Level = globalLevel(user.id);
    let source: RefRecipient['source'] = { type: 'global', id: null, full_path: null };
    let decisive = settingAt(user.id, { type: 'global' });
    for (const src of sources) {
      const s = settingAt(user.id, src);
      if (s && s.level !== 'global') {
        level = s.level;
        source = { type: src.type, id: src.id, full_path: src.fullPath };
        decisive = s;
        break;
      }
    }
    const flag = flagOf(decisive);
    const passes = (kind: string) => {
      const takesPart = kind !== 'watch';
      if (level === 'disabled') return false;
      if (level === 'mention') return kind === 'mention';
      if (level === 'participating') return takesPart || PARTICIPATING_ALSO.includes(req.event);
      if (level === 'custom') return flag || takesPart;
      if (level === 'watch') return takesPart || !WATCH_EXCLUDED.includes(req.event);
      return false;
    };
    const kind = (['mention', 'participating', 'watch'] as const).find((k) => mine.includes(k) && passes(k));
    if (!kind) continue;
    let email = user.email;
    const globalEmail = settingAt(user.id, { type: 'global' })?.email;
    if (globalEmail) email = globalEmail;
    for (const g of [...ancestors].reverse()) {
      const e = settingAt(user.id, { type: 'group', id: g.id })?.email;
      if (e) email = e;
    }
    out.push({
      user_id: user.id,
      username: user.username,
      email,
      reason:
        kind === 'mention'
          ? 'mentioned'
          : kind === 'participating'
            ? 'participating'
            : level === 'custom'
              ? 'custom'
              : 'watching',
      level,
      source,
    });
  }
  return out;
}

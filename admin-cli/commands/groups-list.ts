// `groups list`: every group, nested ones by full path.
import { listGroups } from '../../service/domain/namespaces';
import { defineCommand } from '../command';
import { table } from '../output';

export default defineCommand({
  path: ['groups', 'list'],
  describe: 'List groups',
  examples: [['groups list --json', 'every group as JSON: id, full_path, name, visibility']],
  async run(_args, { db }) {
    const json = (await listGroups(db)).map((g) => ({
      id: g.id,
      full_path: g.full_path,
      name: g.name,
      visibility: g.visibility,
    }));
    return {
      json,
      text: table(json, [
        { header: 'ID', value: (g) => g.id },
        { header: 'FULL PATH', value: (g) => g.full_path },
        { header: 'NAME', value: (g) => g.name },
        { header: 'VISIBILITY', value: (g) => g.visibility },
      ]),
    };
  },
});

// `projects list [--group FULL_PATH]`: projects, optionally those under one group.
import { listProjects, projectSummary } from '../../service/domain/namespaces';
import { defineCommand } from '../command';
import { table } from '../output';

export default defineCommand<{ group?: string }>({
  path: ['projects', 'list'],
  describe: 'List projects',
  examples: [
    ['projects list', 'every project'],
    ['projects list --group acme --json', 'the projects under acme and its subgroups, as JSON'],
  ],
  options: (y) => y.option('group', { type: 'string', describe: 'Only projects under this group (full path)' }),
  async run(args, { db }) {
    const json = (await listProjects(db, args.group)).map(projectSummary);
    return {
      json,
      text: table(json, [
        { header: 'ID', value: (p) => p.id },
        { header: 'PATH', value: (p) => p.path_with_namespace },
        { header: 'NAME', value: (p) => p.name },
        { header: 'VISIBILITY', value: (p) => p.visibility },
      ]),
    };
  },
});

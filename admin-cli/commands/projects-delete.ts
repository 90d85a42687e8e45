// `projects delete NAMESPACE/P`: a project and its memberships and notification settings.
// Destructive: confirmed on a terminal, --yes elsewhere.
import { deleteProject, projectSummary } from '../../service/domain/namespaces';
import { defineCommand } from '../command';
import { recordOf } from '../output';

export default defineCommand<{ path: string }>({
  path: ['projects', 'delete <path>'],
  describe: 'Delete a project',
  examples: [['projects delete acme/platform/api --yes', 'delete without asking (scripts)']],
  options: (y) => y.positional('path', { type: 'string', describe: "The project's path with namespace" }),
  confirm: (args) => `Delete project ${args.path} and its members?`,
  async run(args, { db, actor }) {
    const json = projectSummary(await deleteProject(db, args.path, actor));
    return { json, text: `Deleted project ${json.path_with_namespace}.\n${recordOf(json)}` };
  },
});

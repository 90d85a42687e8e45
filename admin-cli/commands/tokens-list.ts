// `tokens list [--user U]`: personal access tokens (never the token itself).
import { listPersonalAccessTokens, personalAccessTokenSummary } from '../../service/domain/personal-access-tokens';
import { defineCommand } from '../command';
import { tokenTable } from '../views';

export default defineCommand<{ user?: string }>({
  path: ['tokens', 'list'],
  describe: 'List personal access tokens',
  examples: [
    ['tokens list', 'every token of every user'],
    ['tokens list --user alice --json', "alice's tokens as JSON"],
  ],
  options: (y) => y.option('user', { type: 'string', describe: 'Only the tokens of this user' }),
  async run(args, { db }) {
    const rows = await listPersonalAccessTokens(db, args.user);
    const views = rows.map((r) => personalAccessTokenSummary(r, r.username));
    return { json: views, text: tokenTable(views) };
  },
});

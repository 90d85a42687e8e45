// `tokens revoke ID`: the token stops working at once. Destructive: confirmed on a terminal,
// --yes elsewhere.
import { personalAccessTokenSummary, revokePersonalAccessToken } from '../../service/domain/personal-access-tokens';
import { findUserById } from '../../service/domain/users';
import { defineCommand } from '../command';
import { UserError } from '../errors';
import { recordOf } from '../output';

export default defineCommand<{ id: string }>({
  path: ['tokens', 'revoke <id>'],
  describe: 'Revoke a personal access token',
  examples: [['tokens revoke 42 --yes', 'revoke token 42 (the id printed by `tokens create`) without asking']],
  // A string, checked here: yargs would turn "abc" into NaN and "1e3" into 1000.
  options: (y) =>
    y.positional('id', { type: 'string', describe: 'The token id (from `tokens create` or `tokens list`)' }),
  confirm: (args) => `Revoke personal access token ${args.id}? Anything using it stops working.`,
  async run(args, { db, actor }) {
    const id = String(args.id);
    if (!/^[1-9]\d{0,15}$/.test(id))
      throw new UserError(`token id "${id}" is not a number (see \`lanyard-admin tokens list\`)`);
    const row = await revokePersonalAccessToken(db, Number(id), actor);
    const owner = await findUserById(db, row.user_id);
    const view = personalAccessTokenSummary(row, owner?.username ?? String(row.user_id));
    return { json: view, text: `Revoked personal access token ${row.id}.\n${recordOf(view)}` };
  },
});

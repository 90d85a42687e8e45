// `tokens create`: a personal access token (glpat-…) for a user, printed once.
import { createPersonalAccessToken } from '../../service/domain/personal-access-tokens';
import { defineCommand } from '../command';
import { recordOf } from '../output';
import { SHOWN_ONCE } from '../views';

interface Args {
  user: string;
  name: string;
  scopes: string;
  expiresAt?: string;
}

export default defineCommand<Args>({
  path: ['tokens', 'create'],
  describe: 'Create a personal access token for a user (printed once)',
  examples: [
    [
      'tokens create --user alice --name ci --scopes "read_api" --expires-at 2027-01-31',
      'a read-only token valid through 31 January 2027 (UTC)',
    ],
  ],
  options: (y) =>
    y
      .option('user', { type: 'string', demandOption: true, describe: 'The username' })
      .option('name', { type: 'string', demandOption: true, describe: 'What the token is for' })
      .option('scopes', {
        type: 'string',
        demandOption: true,
        describe: 'Space-separated: api, read_api, read_user, sudo (administrators only)',
      })
      .option('expires-at', {
        type: 'string',
        describe: 'Last day the token works, YYYY-MM-DD (UTC); default: never expires',
      }),
  async run(args, { db, actor, mailSettings }) {
    const { token, record, user } = await createPersonalAccessToken(db, {
      username: args.user,
      name: args.name,
      scopes: args.scopes,
      expiresAt: args.expiresAt ?? null,
      actor,
      mail: mailSettings(),
    });
    const json = {
      id: record.id,
      name: record.name,
      token,
      scopes: record.scopes,
      expires_at: record.expires_at,
      user: user.username,
    };
    return {
      json,
      text: `Created personal access token ${record.id} for ${user.username}.\n${recordOf(json)}\n${SHOWN_ONCE}`,
    };
  },
});

// `sessions revoke USER (ID | --all)`: end one of a user's sessions (the ID from `sessions list`), or
// all of them. Each ended session's applications get back-channel logout tokens.
import { revokeOtherUserSessions, revokeUserSession } from '../../service/domain/sessions';
import { getUserByUsername } from '../../service/domain/users';
import { defineCommand } from '../command';
import { UserError } from '../errors';

interface Args {
  username: string;
  id?: string;
  all: boolean;
}

export default defineCommand<Args>({
  path: ['sessions', 'revoke <username> [id]'],
  describe: "End a user's session (or --all): signed out of Lanyard and, by back-channel logout, its applications",
  examples: [
    ['sessions revoke alice 3f9c…', 'one session (its ID from `sessions list`)'],
    ['sessions revoke alice --all --yes', 'every session of alice'],
  ],
  options: (y) =>
    y
      .positional('username', { type: 'string', describe: 'The username' })
      .positional('id', { type: 'string', describe: 'The session ID (`sessions list`)' })
      .option('all', { type: 'boolean', default: false, describe: 'Every session of the user' }),
  confirm: (args) =>
    args.all ? `End every session of ${args.username}?` : `End session ${args.id ?? ''} of ${args.username}?`,
  async run(args, { db, actor }) {
    if (args.all === (args.id !== undefined)) throw new UserError('give a session ID or --all (not both)');
    const user = await getUserByUsername(db, args.username);
    if (args.all) {
      const ended = await revokeOtherUserSessions(db, user.id, actor);
      return { json: { user: user.username, revoked: ended }, text: `Ended ${ended} session(s) of ${user.username}.` };
    }
    await revokeUserSession(db, user.id, String(args.id), actor);
    return { json: { user: user.username, revoked: 1 }, text: `Ended session ${args.id} of ${user.username}.` };
  },
});

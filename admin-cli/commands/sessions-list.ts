// `sessions list USER`: a user's signed-in web sessions (what /-/user_settings/active_sessions shows).
import { listUserSessions } from '../../service/domain/sessions';
import { getUserByUsername } from '../../service/domain/users';
import { defineCommand } from '../command';
import { sessionTable, sessionView } from '../views';

export default defineCommand<{ username: string }>({
  path: ['sessions', 'list <username>'],
  describe: "List a user's signed-in sessions, the most recently used first",
  examples: [['sessions list alice --json', 'as JSON']],
  options: (y) => y.positional('username', { type: 'string', describe: 'The username' }),
  async run(args, { db }) {
    const user = await getUserByUsername(db, args.username);
    const views = (await listUserSessions(db, user.id)).map(sessionView);
    return { json: views, text: sessionTable(views) };
  },
});

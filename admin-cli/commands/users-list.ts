// `users list`: every user, as an aligned table or a JSON array.
import { listUsers, secondaryEmailsByUser, userSummary } from '../../service/domain/users';
import { defineCommand } from '../command';
import { userTable } from '../views';

export default defineCommand({
  path: ['users', 'list'],
  describe: 'List users',
  examples: [['users list', 'a table of every user']],
  async run(_args, { db }) {
    const users = await listUsers(db);
    const emails = await secondaryEmailsByUser(db);
    const views = users.map((u) => userSummary(u, emails.get(u.id)));
    return { json: views, text: userTable(views) };
  },
});

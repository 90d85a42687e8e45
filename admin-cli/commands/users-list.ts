// `users list`: every user, as an aligned table or a JSON array.
import { listUsers, userSummary } from '../../service/domain/users';
import { defineCommand } from '../command';
import { userTable } from '../views';

export default defineCommand({
  path: ['users', 'list'],
  describe: 'List users',
  examples: [['users list', 'a table of every user']],
  async run(_args, { db }) {
    const users = await listUsers(db);
    const emails = await db.selectFrom('user_emails').select(['user_id', 'email']).orderBy('id').execute();
    const views = users.map((u) =>
      userSummary(
        u,
        emails.filter((e) => e.user_id === u.id).map((e) => e.email),
      ),
    );
    return { json: views, text: userTable(views) };
  },
});

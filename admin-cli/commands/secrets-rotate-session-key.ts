// `secrets rotate session-key`: a new key signs sessions and CSRF tokens from now on; the previous
// keys keep verifying until they age out, so nobody is signed out. Kept in the database locally
// and in Secrets Manager when deployed (the admin Lambda supplies that service).
import { defineCommand } from '../command';

export default defineCommand({
  path: ['secrets', 'rotate', 'session-key'],
  describe: 'Rotate the session/CSRF signing key (nobody is signed out)',
  examples: [['secrets rotate session-key --json', '{"rotated": true}']],
  async run(_args, { db, actor, services }) {
    await services.rotateSessionKey(db, actor);
    return {
      json: { rotated: true },
      text: 'Rotated the session key: new sessions are signed with it; existing sessions stay valid until the old key ages out.',
    };
  },
});

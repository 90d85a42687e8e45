// `apps rotate-secret APP_ID`: a new client secret, printed once; the old one stops working at once.
import { rotateApplicationSecret } from '../../service/domain/applications';
import { defineCommand } from '../command';
import { recordOf } from '../output';
import { SHOWN_ONCE } from '../views';

export default defineCommand<{ appId: string }>({
  path: ['apps', 'rotate-secret <app-id>'],
  describe: "Replace an application's secret (the old one stops working at once)",
  examples: [['apps rotate-secret 5f2a…e9 --json', '{"application_id": …, "secret": "gloas-…"}']],
  options: (y) => y.positional('app-id', { type: 'string', describe: 'The Application ID (client_id)' }),
  async run(args, { db, actor }) {
    const { application, secret } = await rotateApplicationSecret(db, args.appId, actor);
    const json = { application_id: application.uid, secret };
    return {
      json,
      text: `New secret for ${application.name}; the previous secret no longer works.\n${recordOf(json)}\n${SHOWN_ONCE}`,
    };
  },
});

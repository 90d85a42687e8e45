// `apps update ID|APP_ID`: rename an application, change its redirect URIs, scopes or type; the
// App ID (client_id) and secret stay, so clients keep working.
import { getApplicationByIdOrUid, updateApplication } from '../../service/domain/applications';
import { defineCommand } from '../command';
import { UserError } from '../errors';
import { applicationResult } from '../views';

interface Args {
  appId: string;
  name?: string;
  redirectUri?: string[];
  postLogoutRedirectUri?: string[];
  backchannelLogoutUri?: string;
  backchannelLogoutSessionRequired?: boolean;
  scopes?: string;
  confidential?: boolean;
  dpopBoundAccessTokens?: boolean;
  allowedResource?: string[];
  anyResource?: boolean;
}

export default defineCommand<Args>({
  path: ['apps', 'update <app-id>'],
  describe: 'Change an OAuth application (its App ID and secret stay)',
  examples: [
    ['apps update 3 --redirect-uri https://ci.example.com/oauth/callback', 'fix a typo in the callback'],
    ['apps update 3 --name "CI dashboard" --scopes "openid read_user"', 'rename it and narrow its scopes'],
    ['apps update 3 --no-confidential', 'make it a public client (PKCE, no secret)'],
    ['apps update 3 --backchannel-logout-uri https://ci.example.com/bcl', 'receive back-channel logout tokens'],
    ['apps update 3 --post-logout-redirect-uri ""', 'remove every post-logout redirect URI'],
    ['apps update 3 --dpop-bound-access-tokens', 'require DPoP-bound tokens (RFC 9449)'],
    ['apps update 3 --allowed-resource https://mcp.example.com/mcp', 'its tokens only for that MCP server'],
  ],
  options: (y) =>
    y
      .positional('app-id', { type: 'string', describe: 'The id, or the App ID (client_id)' })
      .option('name', { type: 'string', describe: 'Shown on the consent page' })
      .option('redirect-uri', {
        type: 'string',
        array: true,
        describe: 'Replaces every callback URI (repeat for several)',
      })
      .option('post-logout-redirect-uri', {
        type: 'string',
        array: true,
        describe: 'Replaces every post-logout redirect URI (repeat for several; "" for none)',
      })
      .option('backchannel-logout-uri', {
        type: 'string',
        describe: 'Where logout tokens are POSTed ("" for none)',
      })
      .option('backchannel-logout-session-required', {
        type: 'boolean',
        describe: '--backchannel-logout-session-required or --no-backchannel-logout-session-required',
      })
      .option('scopes', { type: 'string', describe: 'Space-separated; replaces the scopes' })
      .option('confidential', {
        type: 'boolean',
        describe: '--confidential or --no-confidential (public: PKCE, not the secret)',
      })
      .option('dpop-bound-access-tokens', {
        type: 'boolean',
        describe: '--dpop-bound-access-tokens or --no-dpop-bound-access-tokens (require DPoP proofs)',
      })
      .option('allowed-resource', {
        type: 'string',
        array: true,
        describe: 'Replaces the RFC 8707 resources its tokens may be for (repeat for several)',
      })
      .option('any-resource', {
        type: 'boolean',
        describe: 'Clear the list: any https or loopback resource',
        conflicts: 'allowed-resource',
      }),
  async run(args, { db, actor }) {
    const changes = {
      name: args.name,
      redirectUris: args.redirectUri,
      postLogoutRedirectUris: args.postLogoutRedirectUri?.map(String),
      backchannelLogoutUri: args.backchannelLogoutUri,
      backchannelLogoutSessionRequired: args.backchannelLogoutSessionRequired,
      scopes: args.scopes,
      confidential: args.confidential,
      dpopBoundAccessTokens: args.dpopBoundAccessTokens,
      allowedResources: args.anyResource ? null : args.allowedResource?.map(String),
    };
    if (Object.values(changes).every((v) => v === undefined))
      throw new UserError(
        'nothing to change: give --name, --redirect-uri, --post-logout-redirect-uri, --backchannel-logout-uri, --backchannel-logout-session-required, --scopes, --confidential, --dpop-bound-access-tokens, --allowed-resource or --any-resource',
      );
    const app = await getApplicationByIdOrUid(db, args.appId);
    const updated = await updateApplication(db, app.uid, changes, actor);
    return applicationResult(updated, `Updated application ${updated.name}.`);
  },
});

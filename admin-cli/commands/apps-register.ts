// `apps register`: an OAuth application; its secret is printed once.
import { registerApplication } from '../../service/domain/applications';
import { getUserByUsername } from '../../service/domain/users';
import { defineCommand } from '../command';
import { recordOf } from '../output';
import { SHOWN_ONCE } from '../views';

interface Args {
  name: string;
  redirectUri: string[];
  postLogoutRedirectUri?: string[];
  backchannelLogoutUri?: string;
  backchannelLogoutSessionRequired: boolean;
  scopes?: string;
  public: boolean;
  trusted: boolean;
  dpopBoundAccessTokens: boolean;
  owner?: string;
  allowedResource?: string[];
}

export default defineCommand<Args>({
  path: ['apps', 'register'],
  describe: 'Register an OAuth application (prints its secret once)',
  examples: [
    [
      'apps register --name "CI dashboard" --redirect-uri https://ci.example.com/oauth/callback --scopes "read_api read_user"',
      'a confidential web application',
    ],
    [
      'apps register --name "Desktop app" --redirect-uri http://127.0.0.1/callback --public',
      'a native app: no secret, PKCE required',
    ],
  ],
  options: (y) =>
    y
      .option('name', { type: 'string', demandOption: true, describe: 'Shown on the consent page' })
      .option('redirect-uri', {
        type: 'string',
        array: true,
        demandOption: true,
        describe: 'A callback URI (repeat for several)',
      })
      .option('post-logout-redirect-uri', {
        type: 'string',
        array: true,
        describe: 'Where end_session (/oauth/logout) may send people back to (repeat for several)',
      })
      .option('backchannel-logout-uri', {
        type: 'string',
        describe: 'Where logout tokens are POSTed when a session it took part in ends (back-channel logout)',
      })
      .option('backchannel-logout-session-required', {
        type: 'boolean',
        default: false,
        describe: 'The application needs sid in logout tokens (Lanyard always sends it)',
      })
      .option('scopes', {
        type: 'string',
        describe: 'Space-separated: api, read_api, read_user, openid, profile, email (default: api read_api read_user)',
      })
      .option('public', {
        type: 'boolean',
        default: false,
        describe: 'A public client (native/SPA): authenticates with PKCE, not its secret',
      })
      .option('trusted', {
        type: 'boolean',
        default: false,
        describe: 'Skip the consent page (first-party applications only)',
      })
      .option('dpop-bound-access-tokens', {
        type: 'boolean',
        default: false,
        describe: 'Require DPoP (RFC 9449): every token request must carry a DPoP proof',
      })
      .option('owner', {
        type: 'string',
        describe: 'Username owning the application (it appears on their /profile/applications)',
      })
      .option('allowed-resource', {
        type: 'string',
        array: true,
        describe: 'An RFC 8707 resource its tokens may be for (repeat; default: any https or loopback URI)',
      }),
  async run(args, { db, actor }) {
    const owner = args.owner === undefined ? undefined : await getUserByUsername(db, args.owner);
    const { application, secret } = await registerApplication(db, {
      name: args.name,
      redirectUris: args.redirectUri.map(String),
      postLogoutRedirectUris: (args.postLogoutRedirectUri ?? []).map(String),
      backchannelLogoutUri: args.backchannelLogoutUri ?? null,
      backchannelLogoutSessionRequired: args.backchannelLogoutSessionRequired,
      scopes: args.scopes,
      confidential: !args.public,
      trusted: args.trusted,
      dpopBoundAccessTokens: args.dpopBoundAccessTokens,
      ownerId: owner?.id ?? null,
      allowedResources: args.allowedResource?.map(String),
      actor,
    });
    const json = {
      id: application.id,
      application_id: application.uid,
      application_name: application.name,
      secret,
      callback_url: application.redirect_uris.join('\n'),
      scopes: application.scopes,
      confidential: application.confidential,
      trusted: application.trusted,
    };
    const { callback_url: _callback, ...fields } = json;
    const text = `Registered application ${application.name}.\n${recordOf({ ...fields, redirect_uris: application.redirect_uris.join('\n') })}\n${SHOWN_ONCE}`;
    return { json, text };
  },
});

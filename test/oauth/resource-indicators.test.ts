// RFC 8707 resource indicators through the real app: `resource` at /oauth/authorize (kept on the
// code), at the token endpoint for every grant (narrowing only), on refresh; the audience in
// introspection and token info; /api/v4 refusing a token for another resource; invalid_target for
// every bad value, with nothing spent or written.
import { createHash, randomBytes } from 'node:crypto';
import { beforeEach, describe, expect, it } from 'vitest';
import { resetDatabase } from '../support/db';
import { authorizeUrl, consentFields, WebClient } from './support/browser-like';
import { basic, FORM, makeApp, makeUser, PASSWORD, REDIRECT_URI, useFixture } from './support/harness';

const f = useFixture({ config: { publicUrl: 'https://lanyard.example.com' } });

const API = 'https://lanyard.example.com/api/v4';
const MCP = 'https://mcp.example.com/mcp';
const OTHER = 'https://other.example.com/';
const INVALID_TARGET = {
  error: 'invalid_target',
  error_description: 'The requested resource is invalid, missing, unknown, or malformed.',
};
const FOR_ANOTHER_RESOURCE = {
  error: 'invalid_token',
  error_description: 'The access token was issued for another resource.',
};

const body = (values: [string, string][]) => new URLSearchParams(values).toString();
const token = (values: [string, string][], headers: Record<string, string> = {}) =>
  f.app.inject({ method: 'POST', url: '/oauth/token', headers: { ...FORM, ...headers }, payload: body(values) });

let ctx: Awaited<ReturnType<typeof setup>>;
async function setup() {
  await makeUser(f.db, 'alice');
  const conf = await makeApp(f.db, { name: 'Agent', scopes: 'api read_user' });
  const listed = await makeApp(f.db, { name: 'Listed', scopes: 'api', allowedResources: [MCP] });
  const web = new WebClient(f.app);
  expect((await web.signIn('alice', PASSWORD)).statusCode).toBe(302);
  return { conf, listed, web };
}

beforeEach(async () => {
  await resetDatabase(f.db);
  ctx = await setup();
});

/** The authorize URL with `resource` repeated for each of `resources`. */
const withResources = (url: string, resources: string[]) =>
  resources.reduce((u, r) => `${u}&resource=${encodeURIComponent(r)}`, url);

/** Consent (asked every time: prompt=consent) and approve; the code from the redirect. */
async function codeFor(clientId: string, resources: string[]) {
  const page = await ctx.web.get(withResources(`${authorizeUrl(clientId, { state: 's' })}&prompt=consent`, resources));
  expect(page.statusCode).toBe(200);
  const hidden = consentFields(page.body);
  delete hidden.resource;
  const raw = body([
    ...Object.entries(hidden),
    ...resources.map((r): [string, string] => ['resource', r]),
    ['decision', 'authorize'],
  ]);
  const res = await ctx.web.postRaw('/oauth/authorize', raw);
  expect(res.statusCode).toBe(302);
  return { code: new URL(res.headers.location as string).searchParams.get('code') as string, page };
}

const exchange = (code: string, resources: string[] = []) =>
  token(
    [
      ['grant_type', 'authorization_code'],
      ['code', code],
      ['redirect_uri', REDIRECT_URI],
      ...resources.map((r): [string, string] => ['resource', r]),
    ],
    { authorization: basic(ctx.conf.clientId, ctx.conf.secret) },
  );

const introspect = (t: string) =>
  f.app.inject({
    method: 'POST',
    url: '/oauth/introspect',
    headers: { ...FORM, authorization: basic(ctx.conf.clientId, ctx.conf.secret) },
    payload: body([['token', t]]),
  });

const apiUser = (t: string) =>
  f.app.inject({ method: 'GET', url: '/api/v4/user', headers: { authorization: `Bearer ${t}` } });

const audienceRows = () =>
  f.db.selectFrom('oauth_access_tokens').select(['resources', 'audience']).orderBy('id').execute();

describe('authorization code with resource', () => {
  it('binds the token to the resource: introspection and token info say so; /api/v4 refuses it', async () => {
    const { code, page } = await codeFor(ctx.conf.clientId, [MCP]);
    expect(page.body).toContain(`<code>${MCP}</code>`);
    const res = await exchange(code);
    expect(res.statusCode).toBe(200);
    const { access_token } = res.json();
    expect((await introspect(access_token)).json()).toMatchObject({ active: true, aud: MCP });
    const info = await f.app.inject({
      method: 'GET',
      url: '/oauth/token/info',
      headers: { authorization: `Bearer ${access_token}` },
    });
    expect(info.json().aud).toEqual([MCP]);
    const api = await apiUser(access_token);
    expect({ status: api.statusCode, body: api.json() }).toEqual({ status: 401, body: FOR_ANOTHER_RESOURCE });
    expect(api.headers['www-authenticate']).toBe(
      'Bearer realm="Protected by OAuth 2.0", error="invalid_token", error_description="The access token was issued for another resource.", resource_metadata="https://lanyard.example.com/.well-known/oauth-protected-resource/api/v4"',
    );
  });

  it("a token for Lanyard's API identifier (or the issuer) works at /api/v4; an unbound one as before", async () => {
    for (const resources of [[API], ['https://lanyard.example.com'], [MCP, API], []]) {
      const { code } = await codeFor(ctx.conf.clientId, resources);
      const { access_token } = (await exchange(code)).json();
      const api = await apiUser(access_token);
      expect(api.statusCode).toBe(200);
      expect(api.json().username).toBe('alice');
      const aud = (await introspect(access_token)).json().aud;
      // Unbound: the client, as before; one resource: a string; several: the list.
      expect(aud).toEqual(
        resources.length === 0 ? ctx.conf.clientId : resources.length === 1 ? resources[0] : resources,
      );
    }
  });

  it('the token request may narrow the code to a subset; another resource is invalid_target and spends nothing', async () => {
    const { code } = await codeFor(ctx.conf.clientId, [MCP, API]);
    const refused = await exchange(code, [OTHER]);
    expect({ status: refused.statusCode, body: refused.json() }).toEqual({ status: 400, body: INVALID_TARGET });
    expect(refused.headers['cache-control']).toBe('no-store');
    expect(await audienceRows()).toEqual([]);
    const res = await exchange(code, [API]);
    expect(res.statusCode).toBe(200);
    expect(await audienceRows()).toEqual([{ resources: [MCP, API], audience: [API] }]);
  });

  it('refresh keeps the audience, may narrow within the grant, and refuses a resource outside it unchanged', async () => {
    const { code } = await codeFor(ctx.conf.clientId, [MCP, API]);
    const first = (await exchange(code, [MCP])).json();
    const refresh = (rt: string, resources: string[]) =>
      token(
        [
          ['grant_type', 'refresh_token'],
          ['refresh_token', rt],
          ...resources.map((r): [string, string] => ['resource', r]),
        ],
        { authorization: basic(ctx.conf.clientId, ctx.conf.secret) },
      );
    const outside = await refresh(first.refresh_token, [OTHER]);
    expect({ status: outside.statusCode, body: outside.json() }).toEqual({ status: 400, body: INVALID_TARGET });
    const kept = await refresh(first.refresh_token, []);
    expect(kept.statusCode).toBe(200);
    const narrowed = await refresh(kept.json().refresh_token, [API]);
    expect(narrowed.statusCode).toBe(200);
    expect((await apiUser(narrowed.json().access_token)).statusCode).toBe(200);
    expect((await audienceRows()).map((r) => r.audience)).toEqual([[MCP], [MCP], [API]]);
  });
});

describe('RFC 9728 protected-resource metadata', () => {
  it('names Lanyard as the authorization server of /api/v4 (and of the root resource)', async () => {
    const common = {
      authorization_servers: ['https://lanyard.example.com'],
      scopes_supported: ['api', 'read_api', 'read_user'],
      bearer_methods_supported: ['header', 'query'],
      resource_name: 'Lanyard API (GitLab-compatible /api/v4)',
      resource_documentation: 'https://lanyard.example.com/api/v4/openapi.json',
    };
    for (const [path, resource] of [
      ['/.well-known/oauth-protected-resource/api/v4', API],
      ['/.well-known/oauth-protected-resource', 'https://lanyard.example.com'],
    ]) {
      const res = await f.app.inject({ method: 'GET', url: path });
      expect(res.statusCode).toBe(200);
      expect(res.headers['content-type']).toBe('application/json; charset=utf-8');
      expect(res.json()).toEqual({ resource, ...common });
    }
    // The challenge of an unauthenticated /api/v4 request points at the first document.
    const api = await f.app.inject({ method: 'GET', url: '/api/v4/user' });
    expect(api.headers['www-authenticate']).toBe(
      'Bearer realm="Protected by OAuth 2.0", resource_metadata="https://lanyard.example.com/.well-known/oauth-protected-resource/api/v4"',
    );
  });
});

describe('bad resource values', () => {
  const BAD = [
    'relative/path',
    '/api/v4',
    `${MCP}#fragment`,
    'http://mcp.example.com/mcp',
    'ftp://mcp.example.com/',
    'https://user:pw@mcp.example.com/',
    'urn:example:resource',
  ];

  it('at /oauth/authorize: a redirect back with invalid_target and the state (the redirect URI is safe)', async () => {
    for (const resource of BAD) {
      const res = await ctx.web.get(withResources(authorizeUrl(ctx.conf.clientId, { state: 'xyz' }), [resource]));
      expect(res.statusCode).toBe(302);
      const location = new URL(res.headers.location as string);
      expect(`${location.origin}${location.pathname}`).toBe(REDIRECT_URI);
      expect(Object.fromEntries(location.searchParams)).toEqual({
        ...INVALID_TARGET,
        state: 'xyz',
        iss: 'https://lanyard.example.com',
      });
    }
    // Loopback http is fine (a developer's resource server).
    const loopback = await ctx.web.get(withResources(authorizeUrl(ctx.conf.clientId), ['http://127.0.0.1:8080/mcp']));
    expect(loopback.statusCode).toBe(200);
  });

  it('at /oauth/authorize: what allowed_resources does not list', async () => {
    const res = await ctx.web.get(withResources(authorizeUrl(ctx.listed.clientId, { state: 'x' }), [API]));
    expect(new URL(res.headers.location as string).searchParams.get('error')).toBe('invalid_target');
    const ok = await ctx.web.get(withResources(authorizeUrl(ctx.listed.clientId), [MCP]));
    expect(ok.statusCode).toBe(200);
  });

  it('at the token endpoint: 400 invalid_target, nothing issued (client credentials, too many values)', async () => {
    const many = Array.from({ length: 11 }, (_, i) => `https://r${i}.example.com/`);
    for (const resources of [...BAD.map((b) => [b]), many]) {
      const res = await token(
        [['grant_type', 'client_credentials'], ...resources.map((r): [string, string] => ['resource', r])],
        { authorization: basic(ctx.conf.clientId, ctx.conf.secret) },
      );
      expect({ status: res.statusCode, body: res.json() }).toEqual({ status: 400, body: INVALID_TARGET });
    }
    const listed = await token(
      [
        ['grant_type', 'client_credentials'],
        ['resource', API],
      ],
      { authorization: basic(ctx.listed.clientId, ctx.listed.secret) },
    );
    expect({ status: listed.statusCode, body: listed.json() }).toEqual({ status: 400, body: INVALID_TARGET });
    expect(await audienceRows()).toEqual([]);
    const ok = await token(
      [
        ['grant_type', 'client_credentials'],
        ['resource', MCP],
      ],
      { authorization: basic(ctx.conf.clientId, ctx.conf.secret) },
    );
    expect(ok.statusCode).toBe(200);
    expect(await audienceRows()).toEqual([{ resources: [MCP], audience: [MCP] }]);
  });

  it('at /oauth/authorize_device: 400 invalid_target, no device grant', async () => {
    const pub = await makeApp(f.db, { name: 'Device', confidential: false, scopes: 'read_user' });
    const res = await f.app.inject({
      method: 'POST',
      url: '/oauth/authorize_device',
      headers: FORM,
      payload: body([
        ['client_id', pub.clientId],
        ['resource', `${MCP}#x`],
      ]),
    });
    expect({ status: res.statusCode, body: res.json() }).toEqual({ status: 400, body: INVALID_TARGET });
    expect(await f.db.selectFrom('oauth_device_grants').select('id').execute()).toEqual([]);
    const ok = await f.app.inject({
      method: 'POST',
      url: '/oauth/authorize_device',
      headers: FORM,
      payload: body([
        ['client_id', pub.clientId],
        ['resource', MCP],
      ]),
    });
    expect(ok.statusCode).toBe(200);
    expect(await f.db.selectFrom('oauth_device_grants').select('resources').execute()).toEqual([{ resources: [MCP] }]);
  });

  it('a public client with PKCE: the verifier and the resource both bind the code', async () => {
    const pub = await makeApp(f.db, { name: 'Public', confidential: false, scopes: 'read_user' });
    const verifier = randomBytes(32).toString('base64url');
    const challenge = createHash('sha256').update(verifier).digest('base64url');
    const url = withResources(authorizeUrl(pub.clientId, { codeChallenge: challenge, codeChallengeMethod: 'S256' }), [
      MCP,
    ]);
    const page = await ctx.web.get(url);
    const res = await ctx.web.post('/oauth/authorize', { ...consentFields(page.body), decision: 'authorize' });
    const code = new URL(res.headers.location as string).searchParams.get('code') as string;
    const exchanged = await token([
      ['grant_type', 'authorization_code'],
      ['code', code],
      ['redirect_uri', REDIRECT_URI],
      ['client_id', pub.clientId],
      ['code_verifier', verifier],
    ]);
    expect(exchanged.statusCode).toBe(200);
    expect(await audienceRows()).toEqual([{ resources: [MCP], audience: [MCP] }]);
  });
});

// The Model Context Protocol TypeScript SDK (@modelcontextprotocol/sdk), unmodified, against Lanyard
// as the authorization server of a small MCP server (Streamable HTTP) defined here. The SDK client
// is given only the MCP server's URL: the server's 401 names its RFC 9728 metadata, which names
// Lanyard; the SDK reads Lanyard's RFC 8414 metadata, registers itself (RFC 7591), sends the person
// to /oauth/authorize with PKCE and `resource` (RFC 8707), exchanges the code and calls a tool. The
// person signs in and consents through Lanyard's real pages (a cookie-keeping HTTP client follows
// the SDK's authorization URL). The MCP server checks each token by Lanyard's introspection,
// including its audience.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { UnauthorizedError, type OAuthClientProvider } from '@modelcontextprotocol/sdk/client/auth.js';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import type {
  OAuthClientInformationMixed,
  OAuthClientMetadata,
  OAuthTokens,
} from '@modelcontextprotocol/sdk/shared/auth.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Db } from '../../service/db/schema';
import { registerApplication } from '../../service/domain/applications';
import { makeUser, TEST_PASSWORD } from '../support/api-fixtures';
import { buildTestApp } from '../support/app';
import { createTestDatabase } from '../support/db';

let db: Db;
let lanyard: string;
let mcp: Server;
let mcpUrl: string;
/** Every token the MCP server saw, with what introspection said about it. */
const seen: { token: string; introspection: Record<string, unknown> }[] = [];

async function freePort(): Promise<number> {
  const probe = createServer();
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
  const { port } = probe.address() as AddressInfo;
  await new Promise((resolve) => probe.close(resolve));
  return port;
}

const send = (res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}) => {
  res.writeHead(status, { 'content-type': 'application/json', ...headers });
  res.end(JSON.stringify(body));
};

/** The MCP server: RFC 9728 metadata, a bearer check by introspection (audience included), one tool. */
async function startMcpServer(introspectionClient: { id: string; secret: string }) {
  const port = await freePort();
  mcpUrl = `http://127.0.0.1:${port}/mcp`;
  const metadataUrl = `http://127.0.0.1:${port}/.well-known/oauth-protected-resource/mcp`;
  const challenge = (error?: string) => ({
    'www-authenticate': `Bearer ${error ? `error="${error}", ` : ''}resource_metadata="${metadataUrl}"`,
  });
  mcp = createServer(async (req: IncomingMessage, res: ServerResponse) => {
    if (req.url === '/.well-known/oauth-protected-resource/mcp') {
      return send(res, 200, {
        resource: mcpUrl,
        authorization_servers: [lanyard],
        scopes_supported: ['read_user'],
        bearer_methods_supported: ['header'],
      });
    }
    if (!req.url?.startsWith('/mcp')) return send(res, 404, { error: 'not found' });
    const token = /^Bearer (\S+)$/.exec(req.headers.authorization ?? '')?.[1];
    if (!token) return send(res, 401, { error: 'invalid_token' }, challenge());
    const introspected = await fetch(`${lanyard}/oauth/introspect`, {
      method: 'POST',
      headers: {
        'content-type': 'application/x-www-form-urlencoded',
        authorization: `Basic ${Buffer.from(`${introspectionClient.id}:${introspectionClient.secret}`).toString('base64')}`,
      },
      body: new URLSearchParams({ token }),
    });
    const introspection = (await introspected.json()) as Record<string, unknown>;
    seen.push({ token, introspection });
    const aud = introspection.aud;
    const audience = Array.isArray(aud) ? aud : [aud];
    // Only a live token issued for this server (RFC 8707 audience): never one for another resource.
    if (introspection.active !== true || !audience.includes(mcpUrl))
      return send(res, 401, { error: 'invalid_token' }, challenge('invalid_token'));
    const server = new McpServer({ name: 'lanyard-test-mcp', version: '1.0.0' });
    server.registerTool('whoami', { description: 'Who the token acts for' }, async () => ({
      content: [{ type: 'text', text: `You are ${introspection.username}` }],
    }));
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined });
    res.on('close', () => {
      void transport.close();
      void server.close();
    });
    await server.connect(transport);
    await transport.handleRequest(req, res);
  });
  await new Promise<void>((resolve) => mcp.listen(port, '127.0.0.1', resolve));
}

/** A person's browser, reduced to cookies: signs in on Lanyard's page, then follows authorization URLs. */
class Browser {
  cookies = new Map<string, string>();
  private get cookie() {
    return [...this.cookies].map(([k, v]) => `${k}=${v}`).join('; ');
  }
  async request(url: string, init: RequestInit = {}) {
    const res = await fetch(url, {
      ...init,
      redirect: 'manual',
      headers: { ...(init.headers as Record<string, string>), cookie: this.cookie, origin: lanyard },
    });
    for (const c of res.headers.getSetCookie()) {
      const [pair] = c.split(';');
      const i = pair.indexOf('=');
      this.cookies.set(pair.slice(0, i), pair.slice(i + 1));
    }
    return res;
  }
  async postForm(url: string, fields: [string, string][]) {
    return this.request(url, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams(fields).toString(),
    });
  }
  static hidden(html: string): [string, string][] {
    const decode = (v: string) =>
      v
        .replace(/&quot;/g, '"')
        .replace(/&#39;/g, "'")
        .replace(/&lt;/g, '<')
        .replace(/&gt;/g, '>')
        .replace(/&amp;/g, '&');
    return [...html.matchAll(/<input type="hidden" name="([^"]+)" value="([^"]*)">/g)].map((m) => [m[1], decode(m[2])]);
  }
  async signIn(login: string, password: string) {
    const page = await (await this.request(`${lanyard}/users/sign_in`)).text();
    // The password form's own fields (the page has other forms too: the passkey sign-in).
    const form = /<form[^>]*action="\/users\/sign_in"[^>]*>[\s\S]*?<\/form>/.exec(page)?.[0] ?? '';
    const res = await this.postForm(`${lanyard}/users/sign_in`, [
      ...Browser.hidden(form),
      ['user[login]', login],
      ['user[password]', password],
    ]);
    expect(res.status).toBe(302);
  }
}

/** The SDK's OAuthClientProvider, kept in memory; the redirect goes to the person's "browser". */
class InMemoryProvider implements OAuthClientProvider {
  info?: OAuthClientInformationMixed;
  saved?: OAuthTokens;
  verifier?: string;
  authorizationUrl?: URL;
  readonly redirectUrl = 'http://127.0.0.1:33418/callback';
  get clientMetadata(): OAuthClientMetadata {
    return {
      client_name: 'MCP SDK test client',
      redirect_uris: [this.redirectUrl],
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      token_endpoint_auth_method: 'none',
    };
  }
  clientInformation() {
    return this.info;
  }
  saveClientInformation(info: OAuthClientInformationMixed) {
    this.info = info;
  }
  tokens() {
    return this.saved;
  }
  saveTokens(tokens: OAuthTokens) {
    this.saved = tokens;
  }
  redirectToAuthorization(url: URL) {
    this.authorizationUrl = url;
  }
  saveCodeVerifier(verifier: string) {
    this.verifier = verifier;
  }
  codeVerifier() {
    if (!this.verifier) throw new Error('no code verifier saved');
    return this.verifier;
  }
}

beforeAll(async () => {
  db = (await createTestDatabase()).db;
  const port = await freePort();
  lanyard = `http://127.0.0.1:${port}`;
  const app = await buildTestApp(db, {
    publicUrl: lanyard,
    dynamicClientRegistration: { enabled: true, scopes: ['read_user', 'read_api', 'openid', 'profile', 'email'] },
  });
  await app.listen({ host: '127.0.0.1', port });
  await makeUser(db, 'alice');
  // The MCP server's own (confidential) application: its credentials call introspection.
  const { application, secret } = await registerApplication(db, {
    name: 'MCP server',
    redirectUris: ['https://mcp.example/unused'],
    scopes: 'read_user',
  });
  await startMcpServer({ id: application.uid, secret });
});

afterAll(async () => {
  await new Promise((resolve) => mcp?.close(resolve));
});

describe('@modelcontextprotocol/sdk client against an MCP server protected by Lanyard', () => {
  it('discovers Lanyard through the 401, registers, signs the person in with PKCE and resource, calls a tool', async () => {
    const provider = new InMemoryProvider();
    const first = new StreamableHTTPClientTransport(new URL(mcpUrl), { authProvider: provider });
    const client = new Client({ name: 'lanyard-test-client', version: '1.0.0' });
    await expect(client.connect(first)).rejects.toBeInstanceOf(UnauthorizedError);

    // The SDK registered itself dynamically and built an authorization URL for Lanyard.
    const clientId = (provider.info as { client_id: string }).client_id;
    const registered = await db
      .selectFrom('oauth_applications')
      .select(['name', 'confidential', 'dynamically_registered', 'owner_id', 'scopes'])
      .where('uid', '=', clientId)
      .executeTakeFirstOrThrow();
    expect(registered).toEqual({
      name: 'MCP SDK test client',
      confidential: false,
      dynamically_registered: true,
      owner_id: null,
      scopes: ['read_user'],
    });
    const url = provider.authorizationUrl!;
    expect(`${url.origin}${url.pathname}`).toBe(`${lanyard}/oauth/authorize`);
    expect(Object.fromEntries(url.searchParams)).toMatchObject({
      client_id: clientId,
      response_type: 'code',
      code_challenge_method: 'S256',
      resource: mcpUrl,
      scope: 'read_user',
      redirect_uri: provider.redirectUrl,
    });

    // The person signs in on Lanyard's page and approves on the consent page.
    const browser = new Browser();
    const signInRedirect = await browser.request(url.toString());
    expect(signInRedirect.status).toBe(302);
    await browser.signIn('alice', TEST_PASSWORD);
    const consent = await browser.request(url.toString());
    expect(consent.status).toBe(200);
    const html = await consent.text();
    expect(html).toContain('<strong>MCP SDK test client</strong> is requesting access to your account.');
    expect(html).toContain('dynamically registered');
    expect(html).toContain(`<code>${mcpUrl}</code>`);
    const form = html.slice(html.indexOf('<form method="post" action="/oauth/authorize">'));
    const approved = await browser.postForm(`${lanyard}/oauth/authorize`, [
      ...Browser.hidden(form.slice(0, form.indexOf('</form>'))),
      ['decision', 'authorize'],
    ]);
    expect(approved.status).toBe(302);
    const callback = new URL(approved.headers.get('location')!);
    expect(`${callback.origin}${callback.pathname}`).toBe(provider.redirectUrl);
    expect(callback.searchParams.get('iss')).toBe(lanyard);
    await first.finishAuth(callback.searchParams.get('code')!);

    // Connected with the token: the tool answers for alice.
    const transport = new StreamableHTTPClientTransport(new URL(mcpUrl), { authProvider: provider });
    await client.connect(transport);
    const result = await client.callTool({ name: 'whoami', arguments: {} });
    expect(result.content).toEqual([{ type: 'text', text: 'You are alice' }]);
    await client.close();

    // The token is bound to the MCP server: introspection says so, and Lanyard's own API refuses it.
    const accessToken = provider.saved!.access_token;
    expect(seen.at(-1)).toMatchObject({
      token: accessToken,
      introspection: { active: true, aud: mcpUrl, username: 'alice', scope: 'read_user', client_id: clientId },
    });
    const api = await fetch(`${lanyard}/api/v4/user`, { headers: { authorization: `Bearer ${accessToken}` } });
    expect(api.status).toBe(401);
    expect(await api.json()).toEqual({
      error: 'invalid_token',
      error_description: 'The access token was issued for another resource.',
    });
  });

  it("the MCP server refuses a Lanyard token for Lanyard's own API (another audience)", async () => {
    const registered = await registerApplication(db, {
      name: 'Script',
      redirectUris: ['https://script.example/cb'],
      scopes: 'read_user',
    });
    const tokenRes = await fetch(`${lanyard}/oauth/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({
        grant_type: 'password',
        username: 'alice',
        password: TEST_PASSWORD,
        client_id: registered.application.uid,
        client_secret: registered.secret,
        resource: `${lanyard}/api/v4`,
      }),
    });
    expect(tokenRes.status).toBe(200);
    const { access_token } = (await tokenRes.json()) as { access_token: string };
    const res = await fetch(mcpUrl, {
      method: 'POST',
      headers: { authorization: `Bearer ${access_token}`, 'content-type': 'application/json' },
      body: '{}',
    });
    expect(res.status).toBe(401);
    expect(res.headers.get('www-authenticate')).toContain('error="invalid_token"');
  });
});

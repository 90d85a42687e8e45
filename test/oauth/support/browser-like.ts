// A tiny cookie-keeping client over app.inject(): enough to sign in, read CSRF tokens and post forms.
import type { FastifyInstance, LightMyRequestResponse } from 'fastify';
import { FORM, form } from './harness';

export class WebClient {
  cookies = new Map<string, string>();
  constructor(private readonly app: FastifyInstance) {}

  get cookieHeader(): string {
    return [...this.cookies].map(([k, v]) => `${k}=${v}`).join('; ');
  }

  private keep(res: LightMyRequestResponse) {
    for (const c of res.cookies as Array<{ name: string; value: string; expires?: Date; maxAge?: number }>) {
      if ((c.expires && c.expires.getTime() < Date.now()) || c.maxAge === 0 || c.value === '')
        this.cookies.delete(c.name);
      else this.cookies.set(c.name, c.value);
    }
    return res;
  }

  async get(url: string, headers: Record<string, string> = {}) {
    return this.keep(await this.app.inject({ method: 'GET', url, headers: { cookie: this.cookieHeader, ...headers } }));
  }

  async post(url: string, values: Record<string, string | undefined>, headers: Record<string, string> = {}) {
    return this.keep(
      await this.app.inject({
        method: 'POST',
        url,
        payload: form(values),
        headers: { ...FORM, cookie: this.cookieHeader, ...headers },
      }),
    );
  }

  /** Post with the raw body (repeated fields). */
  async postRaw(url: string, body: string) {
    return this.keep(
      await this.app.inject({ method: 'POST', url, payload: body, headers: { ...FORM, cookie: this.cookieHeader } }),
    );
  }

  static csrf(html: string): string {
    const m = /name="authenticity_token" value="([^"]+)"/.exec(html);
    if (!m) throw new Error(`no CSRF token in page:\n${html.slice(0, 500)}`);
    return m[1];
  }

  /**
   * The password step of a person with two-factor: it answers 303 to the sign-in page, which then
   * shows the second step. Returns that page.
   */
  async secondStep(login: string, password: string) {
    const page = await this.get('/users/sign_in');
    const res = await this.post('/users/sign_in', {
      authenticity_token: WebClient.csrf(page.body),
      'user[login]': login,
      'user[password]': password,
    });
    if (res.statusCode !== 303 || res.headers.location !== '/users/sign_in')
      throw new Error(
        `the password step answered ${res.statusCode} ${res.headers.location ?? ''}: ${res.body.slice(0, 300)}`,
      );
    return this.get('/users/sign_in');
  }

  /** Sign in through the form (and the TOTP step when `otp` is given). Returns the final response. */
  async signIn(login: string, password: string, otp?: () => string) {
    const page = await this.get('/users/sign_in');
    let res = await this.post('/users/sign_in', {
      authenticity_token: WebClient.csrf(page.body),
      'user[login]': login,
      'user[password]': password,
    });
    // The password accepted, the second step is a redirect to the sign-in page, which shows it.
    if (otp && res.statusCode === 303 && res.headers.location === '/users/sign_in') {
      const step = await this.get('/users/sign_in');
      res = await this.post('/users/sign_in', {
        authenticity_token: WebClient.csrf(step.body),
        'user[otp_attempt]': otp(),
      });
    }
    return res;
  }
}

export interface AuthorizeOptions {
  redirectUri?: string;
  scope?: string;
  state?: string;
  codeChallenge?: string;
  codeChallengeMethod?: string;
}

export function authorizeUrl(clientId: string, o: AuthorizeOptions = {}): string {
  const q = new URLSearchParams({
    client_id: clientId,
    redirect_uri: o.redirectUri ?? 'https://client.example/callback',
    response_type: 'code',
  });
  if (o.state !== undefined) q.set('state', o.state);
  if (o.scope !== undefined) q.set('scope', o.scope);
  if (o.codeChallenge !== undefined) q.set('code_challenge', o.codeChallenge);
  if (o.codeChallengeMethod !== undefined) q.set('code_challenge_method', o.codeChallengeMethod);
  return `/oauth/authorize?${q}`;
}

/** The hidden fields of the consent form, decoded. */
export function consentFields(html: string): Record<string, string> {
  const out: Record<string, string> = {};
  // The consent form's own fields (not the "Not you? Sign out" form's return_to).
  const consentForm = /<form method="post" action="\/oauth\/authorize">[\s\S]*?<\/form>/.exec(html)?.[0] ?? html;
  for (const m of consentForm.matchAll(/<input type="hidden" name="([^"]+)" value="([^"]*)">/g)) {
    out[m[1]] = m[2]
      .replace(/&quot;/g, '"')
      .replace(/&#39;/g, "'")
      .replace(/&lt;/g, '<')
      .replace(/&gt;/g, '>')
      .replace(/&#96;/g, '`')
      .replace(/&amp;/g, '&');
  }
  return out;
}

/**
 * Signed-in client: consent page → Authorize → the code from the redirect. When the consent page
 * is skipped (trusted app, or a confidential app with a live grant covering the scopes), the
 * code comes straight from the GET.
 */
export async function obtainCode(web: WebClient, clientId: string, o: AuthorizeOptions = {}): Promise<string> {
  const page = await web.get(authorizeUrl(clientId, o));
  const skipped =
    page.statusCode === 302 && new URL(page.headers.location as string, 'http://x/').searchParams.get('code');
  if (skipped) return skipped;
  if (page.statusCode !== 200)
    throw new Error(`authorize: ${page.statusCode} ${page.headers.location ?? page.body.slice(0, 200)}`);
  const res = await web.post('/oauth/authorize', { ...consentFields(page.body), decision: 'authorize' });
  const code = new URL(res.headers.location as string).searchParams.get('code');
  if (!code) throw new Error(`no code: ${res.statusCode} ${res.headers.location}`);
  return code;
}

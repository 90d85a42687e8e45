// The attack suite, part 1: fast-check sends random parameters, bodies, headers and encodings to
// EVERY route the app serves (read from the app's own route tree) through app.inject — as an
// anonymous caller and with valid credentials of every kind, so requests get past authentication.
// Properties: no response is ≥ 500, and a rejected request (4xx) changes no row of any table
// (brute-force bookkeeping aside, see support.ts). Figures are printed, nothing is timed.
import fc from 'fast-check';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { addMember, createGroup, createProject, makeOAuthToken, makePat } from '../support/api-fixtures';
import { WebClient } from '../oauth/support/browser-like';
import { basic, makeApp, makeUser, PASSWORD, REDIRECT_URI, useFixture } from '../oauth/support/harness';
import { changedTables, digestQuery, listRoutes, type RouteEntry } from './support';

const f = useFixture({ max: 4 });
/** Runs per (method, route): ~25 routes × this = the requests sent. Tuned for ~20 s on 2 cores. */
const RUNS_PER_ROUTE = Number(process.env.ATTACK_RUNS ?? 40);

let app: FastifyInstance;
let routes: RouteEntry[];
let digest: () => Promise<Record<string, string>>;
let creds: {
  clientId: string;
  secret: string;
  bearer: string;
  pat: string;
  cookie: string;
  csrf: string;
  groupId: number;
  projectId: number;
};
const statuses = new Map<number, number>();
let sent = 0;

beforeAll(async () => {
  app = f.app;
  const { user } = await makeUser(f.db, 'alice');
  const c = await makeApp(f.db);
  const group = await createGroup(f.db, { path: 'acme', name: 'Acme', visibility: 'private' });
  const project = await createProject(f.db, { path: 'acme/rocket', name: 'Rocket' });
  await addMember(f.db, { group: 'acme', username: 'alice', access: 'owner' });
  const web = new WebClient(app);
  await web.signIn('alice', PASSWORD);
  const page = await web.get('/profile/applications');
  creds = {
    clientId: c.clientId,
    secret: c.secret,
    bearer: await makeOAuthToken(f.db, user, ['api']),
    pat: await makePat(f.db, user, ['api']),
    cookie: web.cookieHeader,
    csrf: WebClient.csrf(page.body),
    groupId: group.id,
    projectId: project.id,
  };
  routes = listRoutes(app);
  digest = await digestQuery(f.db);
});

afterAll(() => {
  const histogram = [...statuses].sort((a, b) => a[0] - b[0]).map(([s, n]) => `${s}×${n}`);
  console.log(
    `[attack] fuzz: ${sent} requests over ${routes.length} (method, route) pairs; max status ${Math.max(...statuses.keys())}; statuses ${histogram.join(' ')}`,
  );
});

// ---- arbitraries -------------------------------------------------------------------------------

const PARAM_NAMES = [
  'grant_type',
  'code',
  'redirect_uri',
  'client_id',
  'client_secret',
  'refresh_token',
  'scope',
  'state',
  'username',
  'password',
  'code_verifier',
  'code_challenge',
  'code_challenge_method',
  'response_type',
  'token',
  'token_type_hint',
  'nonce',
  'prompt',
  'level',
  'notification_email',
  'new_note',
  'new_issue',
  'failed_pipeline',
  'private_token',
  'access_token',
  'page',
  'per_page',
  'authenticity_token',
  'user[login]',
  'user[password]',
  'user[otp_attempt]',
  'user[remember_me]',
  'name',
  'redirect_uris',
  'scopes',
  'confidential',
  'uid',
  'id',
  '_method',
];
const SPECIAL_VALUES = [
  '',
  '\u0000',
  'a\u0000b',
  'true',
  'false',
  '1',
  '0',
  '-1',
  '1e309',
  'null',
  'undefined',
  '[]',
  '{}',
  '%',
  '%zz',
  '%00',
  '..',
  '../../etc/passwd',
  '<script>alert(1)</script>',
  "' or 1=1 --",
  'custom',
  'global',
  'watch',
  'authorization_code',
  'password',
  'refresh_token',
  'api read_user',
  'openid',
  'S256',
  'plain',
  'javascript:alert(1)',
  'https://evil.example/',
  'alice',
  'alice@example.com',
  PASSWORD,
  REDIRECT_URI,
  '\u202e\u200b',
  '😀',
  'ﬀ',
  'İ',
  '9'.repeat(400),
  'x'.repeat(70_000),
];

/** Values that get deep: the fixtures' real identifiers and secrets, sometimes. */
const knownValue = () =>
  fc.constantFrom(
    creds.clientId,
    creds.secret,
    creds.bearer,
    creds.pat,
    creds.csrf,
    String(creds.groupId),
    String(creds.projectId),
    'acme',
    'acme/rocket',
  );

const text = fc.oneof(
  fc.string({ unit: 'binary', maxLength: 40 }),
  fc.string({ unit: 'grapheme', maxLength: 20 }),
  fc.integer().map(String),
);
const scalar = () =>
  fc.oneof(
    { weight: 3, arbitrary: fc.constantFrom(...SPECIAL_VALUES) },
    { weight: 3, arbitrary: text },
    { weight: 2, arbitrary: knownValue() },
  );

/** A parameter name, sometimes decorated as an array or a nested object. */
const paramName = fc
  .tuple(
    fc.oneof({ weight: 4, arbitrary: fc.constantFrom(...PARAM_NAMES) }, { weight: 1, arbitrary: text }),
    fc.constantFrom('', '', '', '[]', '[x]', '[a][b]', '[0]', '[', ']'),
  )
  .map(([name, suffix]) => name + suffix);

/** Percent-encoding: standard, every byte encoded (passw%6Frd), raw ASCII, or broken escapes. */
const encodeAll = (s: string) =>
  [...Buffer.from(s, 'utf8')].map((b) => `%${b.toString(16).padStart(2, '0').toUpperCase()}`).join('');
const encoder = fc.constantFrom<(s: string) => string>(
  encodeURIComponent,
  encodeURIComponent,
  encodeAll,
  (s) => encodeURIComponent(s).replace(/%20/g, '+'),
  (s) => `${encodeURIComponent(s)}%`,
  (s) => encodeURIComponent(s).replace(/%/g, '%25'),
);

const pairs = () => fc.array(fc.tuple(paramName, scalar(), encoder), { maxLength: 6 });
const encodePairs = (list: Array<[string, string, (s: string) => string]>) =>
  list.map(([k, v, enc]) => `${enc(k)}=${enc(v)}`).join('&');

/** A JSON value, objects keyed by real parameter names and nested. */
const jsonValue = () =>
  fc.letrec((tie) => ({
    value: fc.oneof(
      { depthSize: 'small', withCrossShrink: true },
      fc.constantFrom(null, true, false, 0, -1, 1.5, 2 ** 53, ''),
      scalar(),
      fc.array(tie('value'), { maxLength: 3 }),
      fc.dictionary(paramName, tie('value'), { maxKeys: 4 }),
    ),
  })).value;

interface Body {
  payload?: string;
  contentType?: string;
}
const body = (): fc.Arbitrary<Body> =>
  fc.oneof(
    fc.constant({}),
    pairs().map((p) => ({ payload: encodePairs(p), contentType: 'application/x-www-form-urlencoded' })),
    jsonValue().map((v) => ({ payload: JSON.stringify(v), contentType: 'application/json' })),
    fc.dictionary(paramName, jsonValue(), { maxKeys: 6 }).map((v) => ({
      payload: JSON.stringify(v),
      contentType: 'application/json',
    })),
    fc
      .tuple(
        fc.constantFrom(
          'application/json',
          'application/json; charset=utf-16',
          'application/x-www-form-urlencoded; charset=latin1',
          'text/plain',
          'application/xml',
          'multipart/form-data; boundary=x',
          'multipart/form-data',
          'application/octet-stream',
          'application/vnd.api+json',
          '',
          ';;;',
        ),
        fc.oneof(
          fc.constantFrom(
            '{"a":',
            '{',
            '[',
            'null',
            '"str"',
            '1',
            '\u0000',
            '--x\r\nContent-Disposition: form-data; name="a"\r\n\r\nb\r\n--x--',
            '<a>1</a>',
          ),
          text,
        ),
      )
      .map(([contentType, payload]) => ({ contentType, payload })),
    // Over the 1 MiB body limit.
    fc.constant({ payload: `a=${'x'.repeat(1_100_000)}`, contentType: 'application/x-www-form-urlencoded' }),
  );

type Auth =
  | 'none'
  | 'bearer'
  | 'bearer-query'
  | 'pat'
  | 'pat-query'
  | 'basic'
  | 'basic-garbage'
  | 'session'
  | 'cookie-garbage';
const auth = fc.constantFrom<Auth>(
  'none',
  'bearer',
  'bearer-query',
  'pat',
  'pat-query',
  'basic',
  'basic-garbage',
  'session',
  'session',
  'cookie-garbage',
);
/** Header values: printable ASCII (what HTTP/1.1 carries; inject refuses control characters). */
const headerText = fc.string({
  unit: fc.integer({ min: 0x20, max: 0x7e }).map((c) => String.fromCharCode(c)),
  maxLength: 60,
});
const extraHeaders = fc.dictionary(
  fc.constantFrom(
    'accept',
    'origin',
    'referer',
    'x-forwarded-for',
    'sudo',
    'x-requested-with',
    'accept-language',
    'if-none-match',
    'x-http-method-override',
  ),
  headerText,
  { maxKeys: 3 },
);

/** A path parameter: a real id or full path, or hostile (encoded unicode, traversal, huge, broken escape). */
const segment = () =>
  fc.oneof(
    fc.constantFrom(
      String(creds.groupId),
      String(creds.projectId),
      'acme',
      'acme%2Frocket',
      '0',
      '-1',
      '1.5',
      '99999999999999999999',
      '%',
      '%2e%2e',
      '..%2F..',
      '%00',
      encodeURIComponent('ünï/cødé'),
      'x'.repeat(3000),
    ),
    text.map(encodeURIComponent),
  );

interface Attack {
  method: string;
  url: string;
  headers: Record<string, string>;
  payload?: string;
}

function attack(route: RouteEntry): fc.Arbitrary<Attack> {
  return fc
    .record({ path: segment(), query: pairs(), body: body(), auth, extra: extraHeaders })
    .map(({ path, query, body, auth, extra }) => {
      const headers: Record<string, string> = { ...extra };
      const q = encodePairs(query);
      let url = route.url.replace(/:[A-Za-z_]+/g, path) + (q ? `?${q}` : '');
      const append = (k: string, v: string) => {
        url += `${url.includes('?') ? '&' : '?'}${k}=${encodeURIComponent(v)}`;
      };
      if (auth === 'bearer') headers.authorization = `Bearer ${creds.bearer}`;
      if (auth === 'bearer-query') append('access_token', creds.bearer);
      if (auth === 'pat') headers['private-token'] = creds.pat;
      if (auth === 'pat-query') append('private_token', creds.pat);
      if (auth === 'basic') headers.authorization = basic(creds.clientId, creds.secret);
      if (auth === 'basic-garbage') headers.authorization = `Basic ${Buffer.from('::\u0000:').toString('base64')}=`;
      if (auth === 'session') headers.cookie = creds.cookie;
      if (auth === 'cookie-garbage') headers.cookie = '_lanyard_session=%zz; _lanyard_session=..; =;';
      if (body.contentType !== undefined) headers['content-type'] = body.contentType;
      return {
        method: route.method,
        url,
        headers,
        payload: route.method === 'GET' || route.method === 'HEAD' ? undefined : body.payload,
      };
    });
}

describe('every route, fuzzed', () => {
  it('enumerates the routes from the app itself', () => {
    const keys = routes.map((r) => `${r.method} ${r.url}`);
    // The parser must see the whole tree: a sample from each surface.
    expect(keys).toEqual(
      expect.arrayContaining([
        'GET /-/health',
        'POST /oauth/token',
        'GET /oauth/token/info',
        'GET /users/sign_in',
        'POST /profile/applications/:id/delete',
        'PUT /api/v4/notification_settings',
        'PUT /api/v4/projects/:id/notification_settings',
      ]),
    );
    expect(new Set(keys).size).toBe(keys.length);
  });

  it('digests every table: an accepted write shows, a refused one does not', async () => {
    const before = await digest();
    const refused = await app.inject({
      method: 'PUT',
      url: '/api/v4/notification_settings',
      headers: { authorization: `Bearer ${creds.bearer}` },
      payload: { level: 'nonsense' },
    });
    expect(refused.statusCode).toBe(400);
    expect(changedTables(before, await digest())).toEqual([]);
    const accepted = await app.inject({
      method: 'PUT',
      url: '/api/v4/notification_settings',
      headers: { authorization: `Bearer ${creds.bearer}` },
      payload: { level: 'watch' },
    });
    expect(accepted.statusCode).toBe(200);
    // The change and its audit event (every notification settings change is audited, issue 23);
    // a member now watching everything is on the subscriptions list of what they belong to.
    expect(changedTables(before, await digest())).toEqual([
      'audit_events',
      'notification_settings',
      'notification_subscriptions',
    ]);
  });

  it('answers every random request below 500, and a rejected one changes no row', async () => {
    expect(routes.length).toBeGreaterThan(10);
    let before = await digest();
    for (const route of routes) {
      await fc.assert(
        fc.asyncProperty(attack(route), async (a) => {
          const res = await app.inject({
            method: a.method as 'GET',
            url: a.url,
            headers: a.headers,
            payload: a.payload,
          });
          sent++;
          statuses.set(res.statusCode, (statuses.get(res.statusCode) ?? 0) + 1);
          const after = await digest();
          const changed = changedTables(before, after);
          before = after;
          const what = `${a.method} ${a.url.slice(0, 300)} → ${res.statusCode} ${res.body.slice(0, 200)}`;
          expect(res.statusCode, what).toBeLessThan(500);
          if (res.statusCode >= 400) expect(changed, `a rejected request changed rows: ${what}`).toEqual([]);
        }),
        { numRuns: RUNS_PER_ROUTE },
      );
    }
  }, 300_000);
});

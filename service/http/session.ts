// Web sessions over HTTP: the `_lanyard_session` cookie (HttpOnly, SameSite=Lax, Secure behind
// HTTPS). Signed in, it carries `<random id>.<HMAC>` signed with the session key ring and the row
// lives in web_sessions (domain/sessions.ts). Before sign-in nothing is stored: the cookie itself
// is the session, `<nonce>.<expiry>.<data>.<HMAC>` (the return path, the pending TOTP step), so an
// anonymous visitor costs no database write (issue 11: cookie-less GETs grew the table without
// bound). CSRF tokens are an HMAC of the session id (or nonce) under the same ring: bound to the
// session, renewed with it at sign-in, verifiable on any Lambda instance.
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import type { Config } from '../config';
import type { Db, User } from '../db/schema';
import {
  cachedKeyRingSource,
  signWithRing,
  verifyWithRing,
  type KeyRing,
  type KeyRingSource,
} from '../domain/service-keys';
import { randomBytes } from 'node:crypto';
import {
  ANONYMOUS_SESSION_SECONDS,
  createSession,
  deleteSession,
  findSession,
  saveSessionData,
  type SessionData,
  touchSession,
  type WebSession,
} from '../domain/sessions';
import type { SessionEndReason } from '../domain/backchannel-logout';
import { findUserById } from '../domain/users';

export const SESSION_COOKIE = '_lanyard_session';
/** An anonymous session's data larger than this (a very long return path) drops the return path. */
const MAX_ANONYMOUS_DATA = 3000;
const ANONYMOUS_COOKIE = /^([0-9a-f]{32})\.(\d{1,12})\.([A-Za-z0-9_-]{0,4000})\.([A-Za-z0-9_-]{43})$/;
const SIGNED_IN_COOKIE = /^([0-9a-f]{64})\.([A-Za-z0-9_-]{43})$/;
const anonymousSessions = new WeakSet<WebSession>();
export const CSRF_FIELD = 'authenticity_token';

declare module 'fastify' {
  interface FastifyInstance {
    sessions: SessionManager;
  }
}

export class SessionManager {
  readonly #ring: ReturnType<typeof cachedKeyRingSource>;
  readonly #loaded = new WeakMap<FastifyRequest, Promise<WebSession | undefined>>();

  constructor(
    private readonly db: Db,
    private readonly config: Config,
    keyRing: KeyRingSource,
  ) {
    // Reload at most once a second on a miss: a key rotated in elsewhere is picked up within a
    // second, and forged cookies cost at most one key-ring query per second per instance.
    this.#ring = cachedKeyRingSource(keyRing, 60_000, 1_000);
  }

  /** The request's session, if its cookie is validly signed and the row is live. */
  read(request: FastifyRequest): Promise<WebSession | undefined> {
    let p = this.#loaded.get(request);
    if (!p) {
      p = this.#read(request);
      this.#loaded.set(request, p);
    }
    return p;
  }

  /**
   * The request's session read in the same round trip as another look-up: `find` gets the id of
   * the signed-in session to read with its own rows (undefined when there is none to read: no
   * cookie, a forged one, an anonymous session kept in the cookie, or one read already) and
   * returns what it found, the session included.
   */
  readWith<T extends { session?: WebSession }>(
    request: FastifyRequest,
    find: (sessionId: string | undefined) => Promise<T>,
  ): Promise<T> {
    if (this.#loaded.has(request) || !SIGNED_IN_COOKIE.test(request.cookies?.[SESSION_COOKIE] ?? '')) {
      return Promise.all([find(undefined), this.read(request)]).then(([found, session]) => ({ ...found, session }));
    }
    const found = this.#signedInId(request).then(find);
    const session = found.then((f) => f.session);
    // The caller gets the failure (database down: a 503) from `found`; the memo's copy of it must
    // not surface as an unhandled rejection when nothing reads the session again.
    session.catch(() => undefined);
    this.#loaded.set(request, session);
    return found;
  }

  async #read(request: FastifyRequest): Promise<WebSession | undefined> {
    const value = request.cookies?.[SESSION_COOKIE];
    const anonymous = value ? ANONYMOUS_COOKIE.exec(value) : null;
    if (anonymous) return this.#readAnonymous(anonymous);
    const id = await this.#signedInId(request);
    if (id === undefined) return undefined;
    const session = await findSession(this.db, id);
    // The active-sessions page's "last seen": a write at most every few minutes per session.
    if (session) await touchSession(this.db, session);
    return session;
  }

  /** The id in a signed-in session cookie, if its signature is valid (no database read). */
  async #signedInId(request: FastifyRequest): Promise<string | undefined> {
    const m = SIGNED_IN_COOKIE.exec(request.cookies?.[SESSION_COOKIE] ?? '');
    if (!m) return undefined;
    const [, id, signature] = m;
    return (await this.#verify('session', id, signature)) ? id : undefined;
  }

  /**
   * The session's user, whatever their state (callers check it): the row read with the session,
   * else (a session made during this request) looked up.
   */
  async userOf(session: WebSession | undefined): Promise<User | undefined> {
    if (!session?.userId) return undefined;
    return session.user ?? findUserById(this.db, session.userId);
  }

  async #readAnonymous([, nonce, expiry, payload, signature]: RegExpExecArray): Promise<WebSession | undefined> {
    const expiresAt = new Date(Number(expiry) * 1000);
    if (!(await this.#verify('anonymous-session', `${nonce}.${expiry}.${payload}`, signature))) return undefined;
    if (expiresAt.getTime() <= Date.now()) return undefined;
    let data: SessionData;
    try {
      data = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8'));
    } catch {
      return undefined;
    }
    if (!data || typeof data !== 'object' || Array.isArray(data)) return undefined;
    const session: WebSession = { id: nonce, userId: null, data, expiresAt };
    anonymousSessions.add(session);
    return session;
  }

  /**
   * The session, created (anonymous, in the cookie only) when there is none: forms need one for
   * their CSRF token. No database write.
   */
  async ensure(request: FastifyRequest, reply: FastifyReply, data: SessionData = {}): Promise<WebSession> {
    const existing = await this.read(request);
    if (existing) return existing;
    const session: WebSession = {
      id: randomBytes(16).toString('hex'),
      userId: null,
      data,
      expiresAt: new Date(Math.floor(Date.now() / 1000 + ANONYMOUS_SESSION_SECONDS) * 1000),
    };
    anonymousSessions.add(session);
    await this.#setAnonymousCookie(reply, session);
    this.#loaded.set(request, Promise.resolve(session));
    return session;
  }

  /**
   * Sign in: a new session id (no session fixation), the old session deleted. `data` carries
   * over what the caller keeps (nothing by default).
   */
  async signIn(
    request: FastifyRequest,
    reply: FastifyReply,
    userId: number,
    data: SessionData = {},
  ): Promise<WebSession> {
    const old = await this.read(request);
    if (old && !anonymousSessions.has(old)) await deleteSession(this.db, old.id, 'sign_in');
    const userAgent = request.headers['user-agent'];
    const session = await createSession(this.db, userId, data, { userAgent, ipAddress: request.ip });
    await this.#setCookie(reply, session);
    this.#loaded.set(request, Promise.resolve(session));
    return session;
  }

  /** Store the session's data: in its row, or (anonymous) in a re-signed cookie on `reply`. */
  save(session: WebSession, reply?: FastifyReply): Promise<void> {
    if (anonymousSessions.has(session)) {
      // Signed-in pages (flash, 2FA enrolment) pass no reply: they never hold an anonymous session.
      if (!reply) throw new Error('an anonymous session is saved in its cookie: pass the reply');
      return this.#setAnonymousCookie(reply, session);
    }
    return saveSessionData(this.db, session);
  }

  /** Sign out: the session ends (its applications get back-channel logout tokens, `reason`). */
  async destroy(request: FastifyRequest, reply: FastifyReply, reason: SessionEndReason = 'sign_out'): Promise<void> {
    const session = await this.read(request);
    if (session && !anonymousSessions.has(session)) await deleteSession(this.db, session.id, reason);
    reply.clearCookie(SESSION_COOKIE, this.#cookieOptions());
    this.#loaded.set(request, Promise.resolve(undefined));
  }

  /** The service key ring (cached), for what else it keys: TOTP secrets at rest. */
  keyRing(): { load(): Promise<KeyRing>; refresh(): Promise<KeyRing> } {
    // A sealed secret's key id comes from the database, not from a request: reload at once.
    return { load: () => this.#ring.load(), refresh: () => this.#ring.reload() };
  }

  async csrfToken(session: WebSession): Promise<string> {
    return signWithRing(await this.#ring.load(), 'csrf', session.id);
  }

  /** A form post's CSRF token: present, and the HMAC of this session's id. */
  async verifyCsrf(session: WebSession | undefined, token: unknown): Promise<boolean> {
    if (!session || typeof token !== 'string' || !/^[A-Za-z0-9_-]{43}$/.test(token)) return false;
    return this.#verify('csrf', session.id, token);
  }

  async #verify(purpose: string, value: string, signature: string): Promise<boolean> {
    let ring: KeyRing = await this.#ring.load();
    if (verifyWithRing(ring, purpose, value, signature)) return true;
    // Perhaps signed by a key rotated in on another instance since we loaded the ring.
    const fresh = await this.#ring.refresh();
    if (fresh === ring) return false;
    ring = fresh;
    return verifyWithRing(ring, purpose, value, signature);
  }

  async #setCookie(reply: FastifyReply, session: WebSession): Promise<void> {
    const signature = signWithRing(await this.#ring.load(), 'session', session.id);
    reply.setCookie(SESSION_COOKIE, `${session.id}.${signature}`, {
      ...this.#cookieOptions(),
      expires: session.expiresAt,
    });
  }

  async #setAnonymousCookie(reply: FastifyReply, session: WebSession): Promise<void> {
    let payload = Buffer.from(JSON.stringify(session.data)).toString('base64url');
    if (payload.length > MAX_ANONYMOUS_DATA) {
      const { return_to: _dropped, ...rest } = session.data;
      payload = Buffer.from(JSON.stringify(rest)).toString('base64url');
    }
    const expiry = String(Math.floor(session.expiresAt.getTime() / 1000));
    const signed = `${session.id}.${expiry}.${payload}`;
    const signature = signWithRing(await this.#ring.load(), 'anonymous-session', signed);
    reply.setCookie(SESSION_COOKIE, `${signed}.${signature}`, { ...this.#cookieOptions(), expires: session.expiresAt });
  }

  #cookieOptions() {
    return { path: '/', httpOnly: true, sameSite: 'lax' as const, secure: this.config.secureCookies };
  }
}

export interface SessionPluginOptions {
  db: Db;
  config: Config;
  /** The service key ring (LANYARD_HOME/service-keys.json locally, Secrets Manager deployed). */
  keyRing: KeyRingSource;
}

/** Decorates the app with `sessions` (fastify-plugin: the decoration must reach the route plugins). */
export const sessionPlugin = fp<SessionPluginOptions>(
  async (app: FastifyInstance, { db, config, keyRing }) => {
    app.decorate('sessions', new SessionManager(db, config, keyRing));
  },
  { name: 'lanyard-sessions', dependencies: ['@fastify/cookie'] },
);

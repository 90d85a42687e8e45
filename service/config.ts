// Configuration, parsed and validated once. Nothing else in the service reads process.env.
import { isIP } from 'node:net';
import path from 'node:path';
import { parseBoolean } from './domain/booleans';
import { isSingleMailbox } from './domain/email-address';
import { API_SCOPES, OIDC_SCOPES } from './domain/scopes';

export interface Config {
  host: string;
  port: number;
  /** The public base URL (issuer, absolute links); PUBLIC_URL, default http://HOST:PORT. */
  publicUrl: string;
  /** DATABASE_URL, or undefined to use the local embedded instance under `home`. */
  databaseUrl?: string;
  /** Where the local embedded database and state live (.lanyard/). */
  home: string;
  logLevel: 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent';
  /** Secure cookies: true when the public URL is https. */
  secureCookies: boolean;
  /**
   * TRUST_PROXY: which hops in front of the service may set X-Forwarded-For (parseTrustProxy):
   * false (none: the socket's peer is the client), a number of proxies, or their addresses/CIDRs.
   * The client is the right-most untrusted entry (Fastify's trustProxy, proxy-addr semantics).
   */
  trustProxy: TrustProxy;
  /** Pool size for the database. */
  dbPoolMax: number;
  /** Named prepared statements (DB_PREPARED_STATEMENTS, default true; false behind RDS Proxy). */
  dbPreparedStatements: boolean;
  /** ID_TOKEN_LIFETIME: seconds an ID token is valid (Doorkeeper's OpenID Connect default, as GitLab: 120). */
  idTokenLifetimeSeconds: number;
  /**
   * SIGNING_KEY_CACHE_SECONDS: how long an instance may keep signing with a key after a rotation
   * (deployed: the secret is cached this long; default 60). Retired keys stay published this much
   * longer than the ID token lifetime.
   */
  signingKeyCacheSeconds: number;
  /**
   * REFRESH_REUSE_LEEWAY (seconds, 0–60, default 30): a refresh token presented again this soon
   * after its own rotation, by the same client, is a retry (a fresh pair, nothing revoked), not a
   * replay. 0 turns retries off.
   */
  refreshReuseLeeway: number;
  /**
   * DPOP_REQUIRE_NONCE (default false): every DPoP proof must carry a server nonce (RFC 9449 §8, §9),
   * answered with use_dpop_nonce and a DPoP-Nonce header first. Always so for applications that
   * require DPoP (dpop_bound_access_tokens).
   */
  dpopRequireNonce: boolean;
  /**
   * REQUEST_TIMEOUT (seconds, 1–600, default 30): a request whose headers and body have not all
   * arrived by then is answered 408 and its connection closed (a slow-body client cannot hold
   * connections open; issue 22). Headers must arrive within the smaller of this and 10 s.
   */
  requestTimeoutSeconds: number;
  /** PRUNE_INTERVAL_SECONDS: how often `npm start` purges expired rows (default 3600; 0 = never). */
  pruneIntervalSeconds: number;
  /** AUDIT_RETENTION_DAYS: audit events older than this are purged; unset = kept forever. */
  auditRetentionDays?: number;
  /** E-mail: MAIL_URL (the transport), MAIL_FROM and the outbox's sender settings. */
  mail: MailConfig;
  /**
   * RFC 7591 dynamic client registration: DYNAMIC_CLIENT_REGISTRATION=public turns it on (public
   * clients only); unset or `off`, the registration endpoint does not exist.
   * DYNAMIC_CLIENT_REGISTRATION_SCOPES: the scopes such a client may hold (default
   * `read_user read_api openid profile email`).
   */
  dynamicClientRegistration: { enabled: boolean; scopes: string[] };
  /** On AWS (DB_SECRET_ARN set): where the database and the secrets are — ARNs, never values. */
  aws?: AwsConfig;
}

export interface AwsConfig {
  /**
   * DB_SECRET_ARN: the Secrets Manager secret holding {"username","password"} for the database;
   * absent when DATABASE_URL names the database and only the key secrets come from Secrets Manager.
   */
  dbSecretArn?: string;
  /** DB_HOST, DB_PORT (5432), DB_NAME (lanyard). */
  dbHost: string;
  dbPort: number;
  dbName: string;
  /**
   * APP_DB_SECRET_ARN (the migration function only): the app role's secret, which it creates and
   * rotates. The other functions get that secret as DB_SECRET_ARN and never see the master's.
   */
  appDbSecretArn?: string;
  /** SESSION_KEYS_SECRET_ARN: the session/CSRF key ring secret, when deployed with one. */
  sessionKeysSecretArn?: string;
  /** SIGNING_KEYS_SECRET_ARN: the OpenID Connect signing key document, when deployed with one. */
  signingKeysSecretArn?: string;
  /** DB_CA_FILE: a PEM bundle to verify the database's TLS certificate; default: the bundled RDS CAs. */
  dbCaFile?: string;
  /** AWS_REGION, as the Lambda runtime sets it. */
  region: string;
  /** AWS_ENDPOINT_URL_SECRETS_MANAGER: only to point at a local stand-in; default the regional endpoint. */
  secretsManagerEndpoint?: string;
  /** The function role's temporary credentials (AWS_ACCESS_KEY_ID, …, set by the runtime). Never log. */
  credentials: { accessKeyId: string; secretAccessKey: string; sessionToken?: string };
}

/**
 * Where mail goes (MAIL_URL): `smtp://[user:password@]host[:port]` (STARTTLS when offered) or
 * `smtps://…` (TLS from the first byte), `ses` (Amazon SES v2 with the function's role), and unset:
 * RFC 5322 files under LANYARD_HOME/outbox/. The SMTP URL holds a credential: never log it.
 */
export type MailTransportConfig =
  | { kind: 'file'; directory: string }
  | { kind: 'smtp'; url: string; secure: boolean; host: string; port: number }
  | {
      kind: 'ses';
      configurationSet?: string;
      /**
       * MAIL_HANDOFF_QUEUE_URL (deployed relay only): hand messages to this SQS queue, whose consumer
       * outside the VPC calls SES (docs/email.md, "Deployed").
       */
      handOffQueueUrl?: string;
    };

export interface MailConfig {
  transport: MailTransportConfig;
  /** MAIL_FROM, default `Lanyard <noreply@HOST>` (HOST: PUBLIC_URL's host). */
  from: string;
  /** MAIL_MAX_ATTEMPTS (1–100, default 10): attempts before a message is marked failed. */
  maxAttempts: number;
  /** MAIL_CONCURRENCY (1–64, default 4): messages handed to the transport at once. */
  concurrency: number;
  /** MAIL_RETENTION_DAYS (1–3650, default 30): sent and failed messages are pruned after this. */
  retentionDays: number;
  /**
   * MAIL_LEASE_SECONDS (5–3600, default 300): how long a sender's claim on a message holds; a
   * sender that dies mid-send leaves it to be sent again (same Message-ID) after this.
   */
  leaseSeconds: number;
  /**
   * MAIL_SEND_RATE (messages a second, 0–10000, decimals allowed, default 0 = no limit): the
   * sender's token bucket (mail/send-rate.ts). Set it at or below the SES account's maximum send rate.
   */
  sendRate: number;
}

export class ConfigError extends Error {}

export type TrustProxy = false | number | string[];

/** proxy-addr's names for address ranges, accepted in a TRUST_PROXY list as Fastify does. */
const PROXY_RANGE_NAMES = ['loopback', 'linklocal', 'uniquelocal'];

function isProxyAddress(entry: string): boolean {
  if (PROXY_RANGE_NAMES.includes(entry)) return true;
  const [address, prefix, ...rest] = entry.split('/');
  const family = isIP(address);
  if (family === 0 || rest.length > 0) return false;
  if (prefix === undefined) return true;
  return /^\d{1,3}$/.test(prefix) && Number(prefix) <= (family === 4 ? 32 : 128);
}

/**
 * TRUST_PROXY: unset, `false` or `0` — no proxy (X-Forwarded-For is ignored); a whole number — that
 * many proxies in front, each appending the address it received from (the client is the entry that
 * many places from the right); or a comma-separated list of the proxies' addresses / CIDRs (the
 * client is the right-most entry not in the list). `true` is refused: Fastify reads it as "trust
 * every hop" and takes the left-most entry, which the client writes itself, so any client could
 * pick the key of the per-address failure limit.
 */
export function parseTrustProxy(raw: string | undefined): TrustProxy {
  const text = raw?.trim() ?? '';
  if (text === '' || text.toLowerCase() === 'false' || text === '0') return false;
  if (text.toLowerCase() === 'true') {
    throw new ConfigError(
      'TRUST_PROXY=true is refused: it would take the client address from the left-most X-Forwarded-For entry, which the client writes. Set the number of proxies in front of Lanyard (e.g. TRUST_PROXY=1 behind one load balancer) or their addresses (e.g. TRUST_PROXY=10.0.0.0/8)',
    );
  }
  if (/^\d+$/.test(text)) {
    if (Number(text) > 32)
      throw new ConfigError(`TRUST_PROXY must be a number of proxies from 0 to 32 (got "${text}")`);
    return Number(text);
  }
  const entries = text.split(',').map((e) => e.trim());
  const bad = entries.filter((e) => !isProxyAddress(e));
  if (bad.length > 0) {
    throw new ConfigError(
      `TRUST_PROXY must be false, a number of proxies, or a comma-separated list of proxy addresses/CIDRs (got "${bad[0]}" in "${text}")`,
    );
  }
  return entries;
}

/** How long ID tokens live and signing keys are cached: what decides when a retired key drops out. */
export const signingKeyPolicy = (config: Config) => ({
  idTokenLifetimeSeconds: config.idTokenLifetimeSeconds,
  cacheSeconds: config.signingKeyCacheSeconds,
});

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;

export function loadConfig(env: NodeJS.ProcessEnv = process.env, overrides: Partial<Config> = {}): Config {
  const host = env.HOST?.trim() || '127.0.0.1';
  const portText = env.PORT?.trim() || '3000';
  const port = Number(portText);
  if (!/^\d+$/.test(portText) || port < 0 || port > 65535) {
    throw new ConfigError(`PORT must be a number from 0 to 65535 (got "${portText}")`);
  }
  const displayHost = host.includes(':') ? `[${host}]` : host;
  let publicUrl = env.PUBLIC_URL?.trim() || `http://${displayHost}:${port}`;
  try {
    const u = new URL(publicUrl);
    if (u.protocol !== 'http:' && u.protocol !== 'https:') throw new Error();
    publicUrl = u.origin + u.pathname.replace(/\/+$/, '');
  } catch {
    throw new ConfigError(`PUBLIC_URL must be an http(s) URL (got "${publicUrl}")`);
  }
  const logLevel = (env.LOG_LEVEL?.trim() || 'info') as Config['logLevel'];
  if (!LOG_LEVELS.includes(logLevel)) {
    throw new ConfigError(`LOG_LEVEL must be one of ${LOG_LEVELS.join(', ')} (got "${logLevel}")`);
  }
  const poolText = env.DB_POOL_MAX?.trim() || '10';
  if (!/^[1-9]\d*$/.test(poolText)) throw new ConfigError(`DB_POOL_MAX must be a positive integer (got "${poolText}")`);
  const preparedText = env.DB_PREPARED_STATEMENTS?.trim() || 'true';
  const dbPreparedStatements = parseBoolean(preparedText);
  if (dbPreparedStatements === undefined) {
    throw new ConfigError(`DB_PREPARED_STATEMENTS must be true or false (got "${preparedText}")`);
  }
  const idTokenLifetimeSeconds = positiveInteger(env, 'ID_TOKEN_LIFETIME', 120);
  const signingKeyCacheSeconds = positiveInteger(env, 'SIGNING_KEY_CACHE_SECONDS', 60, true);
  const leewayText = env.REFRESH_REUSE_LEEWAY?.trim() || '30';
  if (!/^\d+$/.test(leewayText) || Number(leewayText) > 60) {
    throw new ConfigError(`REFRESH_REUSE_LEEWAY must be a whole number of seconds from 0 to 60 (got "${leewayText}")`);
  }
  const dpopNonceText = env.DPOP_REQUIRE_NONCE?.trim() || 'false';
  const dpopRequireNonce = parseBoolean(dpopNonceText);
  if (dpopRequireNonce === undefined) {
    throw new ConfigError(`DPOP_REQUIRE_NONCE must be true or false (got "${dpopNonceText}")`);
  }
  const timeoutText = env.REQUEST_TIMEOUT?.trim() || '30';
  if (!/^\d+$/.test(timeoutText) || Number(timeoutText) < 1 || Number(timeoutText) > 600) {
    throw new ConfigError(`REQUEST_TIMEOUT must be a whole number of seconds from 1 to 600 (got "${timeoutText}")`);
  }
  const pruneText = env.PRUNE_INTERVAL_SECONDS?.trim() || '3600';
  if (!/^\d+$/.test(pruneText) || Number(pruneText) > 7 * 24 * 3600) {
    throw new ConfigError(`PRUNE_INTERVAL_SECONDS must be a whole number of seconds up to 604800 (got "${pruneText}")`);
  }
  const auditText = env.AUDIT_RETENTION_DAYS?.trim();
  if (auditText !== undefined && auditText !== '' && (!/^[1-9]\d*$/.test(auditText) || Number(auditText) > 36500)) {
    throw new ConfigError(`AUDIT_RETENTION_DAYS must be a whole number of days from 1 to 36500 (got "${auditText}")`);
  }
  return {
    host,
    port,
    publicUrl,
    databaseUrl: env.DATABASE_URL?.trim() || undefined,
    home: path.resolve(env.LANYARD_HOME?.trim() || '.lanyard'),
    logLevel,
    secureCookies: publicUrl.startsWith('https:'),
    trustProxy: parseTrustProxy(env.TRUST_PROXY),
    dbPoolMax: Number(poolText),
    dbPreparedStatements,
    idTokenLifetimeSeconds,
    signingKeyCacheSeconds,
    refreshReuseLeeway: Number(leewayText),
    dpopRequireNonce,
    requestTimeoutSeconds: Number(timeoutText),
    pruneIntervalSeconds: Number(pruneText),
    auditRetentionDays: auditText ? Number(auditText) : undefined,
    mail: loadMailConfig(env, publicUrl, path.resolve(env.LANYARD_HOME?.trim() || '.lanyard')),
    dynamicClientRegistration: loadDynamicClientRegistration(env),
    aws: loadAwsConfig(env),
    ...overrides,
  };
}

const DYNAMIC_CLIENT_SCOPES_DEFAULT = 'read_user read_api openid profile email';

function loadDynamicClientRegistration(env: NodeJS.ProcessEnv): Config['dynamicClientRegistration'] {
  const mode = env.DYNAMIC_CLIENT_REGISTRATION?.trim() || 'off';
  if (mode !== 'off' && mode !== 'public')
    throw new ConfigError(`DYNAMIC_CLIENT_REGISTRATION must be off or public (got "${mode}")`);
  const text = env.DYNAMIC_CLIENT_REGISTRATION_SCOPES?.trim() || DYNAMIC_CLIENT_SCOPES_DEFAULT;
  const scopes = [...new Set(text.split(/[\s,]+/).filter(Boolean))];
  // A self-registered client acts for the person who signs in: never sudo, never an application scope.
  const grantable: string[] = [...API_SCOPES, ...OIDC_SCOPES];
  const wrong = scopes.filter((s) => !grantable.includes(s));
  if (wrong.length > 0)
    throw new ConfigError(
      `DYNAMIC_CLIENT_REGISTRATION_SCOPES may hold only ${grantable.join(', ')} (got "${wrong.join(' ')}")`,
    );
  return { enabled: mode === 'public', scopes };
}

function positiveInteger(env: NodeJS.ProcessEnv, name: string, fallback: number, zeroAllowed = false): number {
  const text = env[name]?.trim() || String(fallback);
  if (!(zeroAllowed ? /^\d+$/ : /^[1-9]\d*$/).test(text) || Number(text) > 86400)
    throw new ConfigError(`${name} must be an integer from ${zeroAllowed ? 0 : 1} to 86400 (got "${text}")`);
  return Number(text);
}

function boundedInteger(env: NodeJS.ProcessEnv, name: string, fallback: number, max: number, min = 1): number {
  const text = env[name]?.trim() || String(fallback);
  if (!/^[1-9]\d*$/.test(text) || Number(text) > max || Number(text) < min) {
    throw new ConfigError(`${name} must be a whole number from ${min} to ${max} (got "${text}")`);
  }
  return Number(text);
}

/** An address as MAIL_FROM takes it: `addr@example.com` or `Display Name <addr@example.com>`. */
const MAIL_FROM_RE = /^(?:([^<>"\p{Cc}]*[^<>"\s\p{Cc}])\s*<([^<>\s]+)>|([^<>\s]+))$/u;

function loadMailConfig(env: NodeJS.ProcessEnv, publicUrl: string, home: string): MailConfig {
  const from = env.MAIL_FROM?.trim() || `Lanyard <noreply@${new URL(publicUrl).hostname}>`;
  if (env.MAIL_FROM?.trim()) {
    const m = MAIL_FROM_RE.exec(from);
    const address = m?.[2] ?? m?.[3];
    if (!address || !isSingleMailbox(address)) {
      throw new ConfigError(`MAIL_FROM must be an address, e.g. "Lanyard <noreply@example.com>" (got "${from}")`);
    }
  }
  return {
    transport: mailTransport(env, home),
    from,
    maxAttempts: boundedInteger(env, 'MAIL_MAX_ATTEMPTS', 10, 100),
    concurrency: boundedInteger(env, 'MAIL_CONCURRENCY', 4, 64),
    retentionDays: boundedInteger(env, 'MAIL_RETENTION_DAYS', 30, 3650),
    leaseSeconds: boundedInteger(env, 'MAIL_LEASE_SECONDS', 300, 3600, 5),
    sendRate: sendRate(env),
  };
}

function sendRate(env: NodeJS.ProcessEnv): number {
  const text = env.MAIL_SEND_RATE?.trim() || '0';
  if (!/^\d{1,5}(?:\.\d{1,3})?$/.test(text) || Number(text) > 10_000) {
    throw new ConfigError(
      `MAIL_SEND_RATE must be a number of messages a second from 0 (no limit) to 10000 (got "${text}")`,
    );
  }
  return Number(text);
}

/** MAIL_URL parsed; an error names the problem but never echoes the URL (it may hold a password). */
function mailTransport(env: NodeJS.ProcessEnv, home: string): MailTransportConfig {
  const value = env.MAIL_URL?.trim() || undefined;
  const handOffQueueUrl = env.MAIL_HANDOFF_QUEUE_URL?.trim() || undefined;
  if (handOffQueueUrl && value !== 'ses') throw new ConfigError('MAIL_HANDOFF_QUEUE_URL needs MAIL_URL=ses');
  if (
    handOffQueueUrl &&
    !/^https:\/\/sqs\.[a-z0-9-]+\.amazonaws\.com(\.cn)?\/\d{12}\/[A-Za-z0-9_-]{1,80}$/.test(handOffQueueUrl)
  ) {
    throw new ConfigError(`MAIL_HANDOFF_QUEUE_URL must be an SQS queue URL (got "${handOffQueueUrl}")`);
  }
  if (value === undefined) return { kind: 'file', directory: path.join(home, 'outbox') };
  if (value === 'ses') {
    const configurationSet = env.MAIL_SES_CONFIGURATION_SET?.trim() || undefined;
    if (configurationSet && !/^[A-Za-z0-9_-]{1,64}$/.test(configurationSet)) {
      throw new ConfigError(`MAIL_SES_CONFIGURATION_SET must be a configuration set name (got "${configurationSet}")`);
    }
    return { kind: 'ses', configurationSet, handOffQueueUrl };
  }
  const usage = 'MAIL_URL must be smtp://[user:password@]host[:port], smtps://…, or ses';
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new ConfigError(`${usage} (it is not a URL)`);
  }
  if (url.protocol !== 'smtp:' && url.protocol !== 'smtps:') {
    throw new ConfigError(`${usage} (got the scheme "${url.protocol.slice(0, 20)}")`);
  }
  if (!url.hostname) throw new ConfigError(`${usage} (the host is missing)`);
  if (url.pathname && url.pathname !== '/') throw new ConfigError(`${usage} (a path is not allowed)`);
  if (url.search || url.hash) throw new ConfigError(`${usage} (query parameters are not allowed)`);
  if (url.password && !url.username) throw new ConfigError(`${usage} (a password needs a user name)`);
  try {
    decodeURIComponent(url.username);
    decodeURIComponent(url.password);
  } catch {
    throw new ConfigError(`${usage} (the user name or password is not valid percent-encoding)`);
  }
  const secure = url.protocol === 'smtps:';
  return { kind: 'smtp', url: value, secure, host: url.hostname, port: Number(url.port || (secure ? 465 : 587)) };
}

function loadAwsConfig(env: NodeJS.ProcessEnv): AwsConfig | undefined {
  const dbSecretArn = env.DB_SECRET_ARN?.trim() || undefined;
  const signingKeysSecretArn = env.SIGNING_KEYS_SECRET_ARN?.trim() || undefined;
  if (!dbSecretArn && !signingKeysSecretArn) return undefined;
  const dbHost = env.DB_HOST?.trim() ?? '';
  if (dbSecretArn && !dbHost) throw new ConfigError('DB_HOST is required with DB_SECRET_ARN');
  const portText = env.DB_PORT?.trim() || '5432';
  if (!/^\d+$/.test(portText) || Number(portText) < 1 || Number(portText) > 65535) {
    throw new ConfigError(`DB_PORT must be a number from 1 to 65535 (got "${portText}")`);
  }
  const region = env.AWS_REGION?.trim() || env.AWS_DEFAULT_REGION?.trim();
  const accessKeyId = env.AWS_ACCESS_KEY_ID?.trim();
  const secretAccessKey = env.AWS_SECRET_ACCESS_KEY?.trim();
  if (!region || !accessKeyId || !secretAccessKey) {
    throw new ConfigError(
      `${dbSecretArn ? 'DB_SECRET_ARN' : 'SIGNING_KEYS_SECRET_ARN'} needs AWS_REGION, AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (set by the Lambda runtime)`,
    );
  }
  return {
    dbSecretArn,
    dbHost,
    dbPort: Number(portText),
    dbName: env.DB_NAME?.trim() || 'lanyard',
    appDbSecretArn: env.APP_DB_SECRET_ARN?.trim() || undefined,
    sessionKeysSecretArn: env.SESSION_KEYS_SECRET_ARN?.trim() || undefined,
    signingKeysSecretArn,
    dbCaFile: env.DB_CA_FILE?.trim() || undefined,
    region,
    secretsManagerEndpoint: env.AWS_ENDPOINT_URL_SECRETS_MANAGER?.trim() || undefined,
    credentials: { accessKeyId, secretAccessKey, sessionToken: env.AWS_SESSION_TOKEN?.trim() || undefined },
  };
}

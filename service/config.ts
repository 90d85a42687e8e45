// Configuration, parsed and validated once. Nothing else in the service reads process.env.
import path from 'node:path';
import { parseBoolean } from './domain/booleans';

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
  /** Trust X-Forwarded-* from a front proxy (API Gateway on Lambda). */
  trustProxy: boolean;
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
   * REQUEST_TIMEOUT (seconds, 1–600, default 30): a request whose headers and body have not all
   * arrived by then is answered 408 and its connection closed (a slow-body client cannot hold
   * connections open; issue 22). Headers must arrive within the smaller of this and 10 s.
   */
  requestTimeoutSeconds: number;
  /** PRUNE_INTERVAL_SECONDS: how often `npm start` purges expired rows (default 3600; 0 = never). */
  pruneIntervalSeconds: number;
  /** AUDIT_RETENTION_DAYS: audit events older than this are purged; unset = kept forever. */
  auditRetentionDays?: number;
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

export class ConfigError extends Error {}

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
    trustProxy: parseBoolean(env.TRUST_PROXY) ?? false,
    dbPoolMax: Number(poolText),
    dbPreparedStatements,
    idTokenLifetimeSeconds,
    signingKeyCacheSeconds,
    refreshReuseLeeway: Number(leewayText),
    requestTimeoutSeconds: Number(timeoutText),
    pruneIntervalSeconds: Number(pruneText),
    auditRetentionDays: auditText ? Number(auditText) : undefined,
    aws: loadAwsConfig(env),
    ...overrides,
  };
}

function positiveInteger(env: NodeJS.ProcessEnv, name: string, fallback: number, zeroAllowed = false): number {
  const text = env[name]?.trim() || String(fallback);
  if (!(zeroAllowed ? /^\d+$/ : /^[1-9]\d*$/).test(text) || Number(text) > 86400)
    throw new ConfigError(`${name} must be an integer from ${zeroAllowed ? 0 : 1} to 86400 (got "${text}")`);
  return Number(text);
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

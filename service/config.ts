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
  /** PRUNE_INTERVAL_SECONDS: how often `npm start` purges expired rows (default 3600; 0 = never). */
  pruneIntervalSeconds: number;
  /** AUDIT_RETENTION_DAYS: audit events older than this are purged; unset = kept forever. */
  auditRetentionDays?: number;
  /** On AWS (DB_SECRET_ARN set): where the database and the secrets are — ARNs, never values. */
  aws?: AwsConfig;
}

export interface AwsConfig {
  /** DB_SECRET_ARN: the Secrets Manager secret holding {"username","password"} for the database. */
  dbSecretArn: string;
  /** DB_HOST, DB_PORT (5432), DB_NAME (lanyard). */
  dbHost: string;
  dbPort: number;
  dbName: string;
  /** SESSION_KEYS_SECRET_ARN: the session/CSRF key ring secret, when deployed with one. */
  sessionKeysSecretArn?: string;
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
    pruneIntervalSeconds: Number(pruneText),
    auditRetentionDays: auditText ? Number(auditText) : undefined,
    aws: loadAwsConfig(env),
    ...overrides,
  };
}

function loadAwsConfig(env: NodeJS.ProcessEnv): AwsConfig | undefined {
  const dbSecretArn = env.DB_SECRET_ARN?.trim();
  if (!dbSecretArn) return undefined;
  const dbHost = env.DB_HOST?.trim();
  if (!dbHost) throw new ConfigError('DB_HOST is required with DB_SECRET_ARN');
  const portText = env.DB_PORT?.trim() || '5432';
  if (!/^\d+$/.test(portText) || Number(portText) < 1 || Number(portText) > 65535) {
    throw new ConfigError(`DB_PORT must be a number from 1 to 65535 (got "${portText}")`);
  }
  const region = env.AWS_REGION?.trim() || env.AWS_DEFAULT_REGION?.trim();
  const accessKeyId = env.AWS_ACCESS_KEY_ID?.trim();
  const secretAccessKey = env.AWS_SECRET_ACCESS_KEY?.trim();
  if (!region || !accessKeyId || !secretAccessKey) {
    throw new ConfigError(
      'DB_SECRET_ARN needs AWS_REGION, AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (set by the Lambda runtime)',
    );
  }
  return {
    dbSecretArn,
    dbHost,
    dbPort: Number(portText),
    dbName: env.DB_NAME?.trim() || 'lanyard',
    sessionKeysSecretArn: env.SESSION_KEYS_SECRET_ARN?.trim() || undefined,
    dbCaFile: env.DB_CA_FILE?.trim() || undefined,
    region,
    secretsManagerEndpoint: env.AWS_ENDPOINT_URL_SECRETS_MANAGER?.trim() || undefined,
    credentials: { accessKeyId, secretAccessKey, sessionToken: env.AWS_SESSION_TOKEN?.trim() || undefined },
  };
}

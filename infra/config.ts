// Typed stack configuration: every key, its default and its bounds (documented in Pulumi.yaml).
// Pure: parseStackConfig takes the raw strings, so the defaults and checks are unit-tested.
import { connectionBudget, proxyConnectionBudget } from './budget';

export interface StackConfig {
  /** Environment label used in names and tags (the stack name). */
  stack: string;
  vpcCidr: string;
  /** Two AZs by default; the database subnet group needs at least two. */
  availabilityZoneCount: number;
  dbInstanceClass: string;
  dbAllocatedStorageGb: number;
  dbMaxAllocatedStorageGb: number;
  dbMultiAz: boolean;
  dbBackupRetentionDays: number;
  /** RDS deletion protection, Pulumi `protect` and a final snapshot on delete. Off for throwaway stacks. */
  deletionProtection: boolean;
  logRetentionDays: number;
  apiMemoryMb: number;
  /** Reserved concurrency of the API function: the database connection budget (one connection each). */
  apiReservedConcurrency: number;
  /** RDS Proxy between the functions and the database; the API's reservation is checked against its budget. */
  rdsProxy: boolean;
  throttleRateLimit: number;
  throttleBurstLimit: number;
  /** Optional custom domain (with an ACM certificate ARN in the same region). */
  domainName?: string;
  certificateArn?: string;
  /** Optional e-mail subscribed to the alarm topic. */
  alarmEmail?: string;
  /** Days a deleted secret can be restored (0 = delete at once, for throwaway stacks). */
  secretRecoveryDays: number;
  /**
   * The public front: `httpApi` (API Gateway HTTP API: cheapest, one global stage throttle) or
   * `waf` (a regional REST API with an AWS WAF web ACL: per-client-address rate-based rules).
   */
  edge: 'httpApi' | 'waf';
  /** `waf` edge: requests per client address per 5 minutes, any path, before WAF blocks it. */
  wafRateLimit: number;
  /** `waf` edge: POSTs to the credential endpoints per client address per 5 minutes. */
  wafCredentialRateLimit: number;
  /** Days the admin function's CloudTrail records are kept in their S3 bucket. */
  auditRetentionDays: number;
  /** Seconds a rotated refresh token may be retried by its client (the API's REFRESH_REUSE_LEEWAY). */
  refreshReuseLeeway: number;
  /** EventBridge schedule of the retention function. */
  pruneSchedule: string;
  /** Audit events (the database's audit_events) older than this many days are purged; 0 (the default) keeps them forever. */
  auditEventRetentionDays: number;
  /**
   * The domain Lanyard sends e-mail from (SES identity with Easy DKIM, MAIL FROM `mail.<domain>`);
   * unset: no e-mail infrastructure, and messages wait in the outbox.
   */
  mailDomain?: string;
  /**
   * The SES account's maximum send rate (messages a second, default 14, SES's first production
   * quota; 1 in the sandbox): the senders together never exceed it.
   */
  mailSendRate: number;
  /** How many mail sender instances run at once (the queue's maximum concurrency, 2–100, default 2). */
  mailSenderConcurrency: number;
  /** Alarm when this many messages fail in 15 minutes (default 1). */
  mailFailedAlarm: number;
  /** Alarm when this many addresses are suppressed in a day (default 10). */
  mailSuppressedAlarm: number;
}

export const EDGES = ['httpApi', 'waf'] as const;

export class StackConfigError extends Error {}

/** CloudWatch Logs accepts only these retention values. */
export const LOG_RETENTION_DAYS = [
  1, 3, 5, 7, 14, 30, 60, 90, 120, 150, 180, 365, 400, 545, 731, 1096, 1827, 2192, 2557, 2922, 3288, 3653,
];

export type RawConfig = Record<string, string | undefined>;

/** Every `lanyard:` key the program reads (each is declared with its default in Pulumi.yaml). */
export const CONFIG_KEYS = [
  'vpcCidr',
  'availabilityZoneCount',
  'dbInstanceClass',
  'dbAllocatedStorageGb',
  'dbMaxAllocatedStorageGb',
  'dbMultiAz',
  'dbBackupRetentionDays',
  'deletionProtection',
  'logRetentionDays',
  'apiMemoryMb',
  'apiReservedConcurrency',
  'rdsProxy',
  'throttleRateLimit',
  'throttleBurstLimit',
  'domainName',
  'certificateArn',
  'alarmEmail',
  'secretRecoveryDays',
  'edge',
  'wafRateLimit',
  'wafCredentialRateLimit',
  'auditRetentionDays',
  'refreshReuseLeeway',
  'pruneSchedule',
  'auditEventRetentionDays',
  'mailDomain',
  'mailSendRate',
  'mailSenderConcurrency',
  'mailFailedAlarm',
  'mailSuppressedAlarm',
] as const;

export function parseStackConfig(stack: string, raw: RawConfig): StackConfig {
  const str = (key: string, fallback: string) => raw[key]?.trim() || fallback;
  const optional = (key: string) => raw[key]?.trim() || undefined;
  const int = (key: string, fallback: number, min: number, max: number) => {
    const text = raw[key]?.trim();
    if (!text) return fallback;
    if (!/^-?\d+$/.test(text) || Number(text) < min || Number(text) > max) {
      throw new StackConfigError(`lanyard:${key} must be an integer from ${min} to ${max} (got "${text}")`);
    }
    return Number(text);
  };
  const bool = (key: string, fallback: boolean) => {
    const text = raw[key]?.trim();
    if (!text) return fallback;
    if (text !== 'true' && text !== 'false')
      throw new StackConfigError(`lanyard:${key} must be true or false (got "${text}")`);
    return text === 'true';
  };

  const config: StackConfig = {
    stack,
    vpcCidr: str('vpcCidr', '10.40.0.0/16'),
    availabilityZoneCount: int('availabilityZoneCount', 2, 2, 6),
    dbInstanceClass: str('dbInstanceClass', 'db.t4g.micro'),
    dbAllocatedStorageGb: int('dbAllocatedStorageGb', 20, 20, 65536),
    dbMaxAllocatedStorageGb: int('dbMaxAllocatedStorageGb', 100, 20, 65536),
    dbMultiAz: bool('dbMultiAz', false),
    dbBackupRetentionDays: int('dbBackupRetentionDays', 7, 1, 35),
    deletionProtection: bool('deletionProtection', true),
    logRetentionDays: int('logRetentionDays', 30, 1, 3653),
    apiMemoryMb: int('apiMemoryMb', 1024, 128, 10240),
    apiReservedConcurrency: int('apiReservedConcurrency', 20, -1, 1000),
    rdsProxy: bool('rdsProxy', false),
    throttleRateLimit: int('throttleRateLimit', 100, 1, 10000),
    throttleBurstLimit: int('throttleBurstLimit', 200, 1, 5000),
    domainName: optional('domainName'),
    certificateArn: optional('certificateArn'),
    alarmEmail: optional('alarmEmail'),
    secretRecoveryDays: int('secretRecoveryDays', 7, 0, 30),
    edge: str('edge', 'httpApi') as StackConfig['edge'],
    // WAF's floor for a rate-based rule is 10 requests per window.
    wafRateLimit: int('wafRateLimit', 1000, 10, 2_000_000_000),
    wafCredentialRateLimit: int('wafCredentialRateLimit', 100, 10, 2_000_000_000),
    auditRetentionDays: int('auditRetentionDays', 365, 1, 3653),
    refreshReuseLeeway: int('refreshReuseLeeway', 30, 0, 60),
    pruneSchedule: str('pruneSchedule', 'rate(1 hour)'),
    auditEventRetentionDays: int('auditEventRetentionDays', 0, 0, 36500),
    mailDomain: optional('mailDomain')?.toLowerCase(),
    mailSendRate: int('mailSendRate', 14, 1, 10000),
    // Lambda's floor for an SQS event source's maximum concurrency is 2.
    mailSenderConcurrency: int('mailSenderConcurrency', 2, 2, 100),
    mailFailedAlarm: int('mailFailedAlarm', 1, 1, 100000),
    mailSuppressedAlarm: int('mailSuppressedAlarm', 10, 1, 100000),
  };

  if (!EDGES.includes(config.edge)) {
    throw new StackConfigError(`lanyard:edge must be one of ${EDGES.join(', ')} (got "${config.edge}")`);
  }

  if (
    config.mailDomain &&
    !/^(?=.{4,253}$)([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z]{2,63}$/.test(config.mailDomain)
  ) {
    throw new StackConfigError(
      `lanyard:mailDomain must be a domain name, e.g. example.org (got "${config.mailDomain}")`,
    );
  }
  if (!/^\d+\.\d+\.\d+\.\d+\/(1[6-9]|2[0-4])$/.test(config.vpcCidr)) {
    throw new StackConfigError(`lanyard:vpcCidr must be an IPv4 CIDR from /16 to /24 (got "${config.vpcCidr}")`);
  }
  if (!/^(rate\(\d+ (minute|minutes|hour|hours|day|days)\)|cron\([^()]+\))$/.test(config.pruneSchedule)) {
    throw new StackConfigError(
      `lanyard:pruneSchedule must be an EventBridge rate(…) or cron(…) expression (got "${config.pruneSchedule}")`,
    );
  }
  if (!LOG_RETENTION_DAYS.includes(config.logRetentionDays)) {
    throw new StackConfigError(
      `lanyard:logRetentionDays must be one of ${LOG_RETENTION_DAYS.join(', ')} (got ${config.logRetentionDays})`,
    );
  }
  if (config.dbMaxAllocatedStorageGb < config.dbAllocatedStorageGb) {
    throw new StackConfigError('lanyard:dbMaxAllocatedStorageGb must be at least lanyard:dbAllocatedStorageGb');
  }
  if (config.secretRecoveryDays !== 0 && config.secretRecoveryDays < 7) {
    throw new StackConfigError('lanyard:secretRecoveryDays must be 0 or from 7 to 30 (a Secrets Manager rule)');
  }
  if (Boolean(config.domainName) !== Boolean(config.certificateArn)) {
    throw new StackConfigError('lanyard:domainName and lanyard:certificateArn go together');
  }
  if (config.apiReservedConcurrency === 0) {
    throw new StackConfigError('lanyard:apiReservedConcurrency 0 would stop the API; use -1 for no reservation');
  }
  // The connection budget: every API instance holds one connection — to the database, or to the
  // proxy, which shares its pool (PROXY_MAX_CONNECTIONS_PERCENT of max_connections) between instances.
  const budget = config.rdsProxy
    ? proxyConnectionBudget(config.dbInstanceClass)
    : connectionBudget(config.dbInstanceClass);
  if (budget && config.apiReservedConcurrency > budget.forApi) {
    throw new StackConfigError(
      `lanyard:apiReservedConcurrency ${config.apiReservedConcurrency} exceeds what ${config.dbInstanceClass} can serve ` +
        `(max_connections ≈ ${budget.maxConnections}, ${budget.forApi} for the API${config.rdsProxy ? ' through RDS Proxy' : ''}); ` +
        `choose a larger instance class${config.rdsProxy ? '' : ', lanyard:rdsProxy'} or a lower reservation`,
    );
  }
  return config;
}

// The Lanyard stack: reads the stack configuration, wires the components, exports the outputs
// the operator and `lanyard-admin --stack` read. Build the bundles first: npm run build:lambda.
import path from 'node:path';
import * as aws from '@pulumi/aws';
import * as pulumi from '@pulumi/pulumi';
import { connectionBudget, PROXY_MAX_CONNECTIONS_PERCENT } from './budget';
import { Admin } from './components/admin';
import { Api, API_TIMEOUT_SECONDS } from './components/api';
import { Audit } from './components/audit';
import { Database } from './components/database';
import { DatabaseProxy } from './components/database-proxy';
import { Migrations } from './components/migrations';
import { Network } from './components/network';
import { Observability } from './components/observability';
import { EVENTS_TIMEOUT_SECONDS, Mail, RELAY_TIMEOUT_SECONDS } from './components/mail';
import { PRUNE_TIMEOUT_SECONDS, Retention } from './components/retention';
import { Secrets } from './components/secrets';
import { CONFIG_KEYS, parseStackConfig, type RawConfig } from './config';
import { hashMigrations } from './migrations-hash';
import { commonTags, functionName, physicalName } from './names';

const ROOT = path.resolve(__dirname, '..');
const bundleDir = (fn: string) => path.join(ROOT, 'dist', 'lambda', fn);

const stack = pulumi.getStack();
const pulumiConfig = new pulumi.Config('lanyard');
const raw: RawConfig = Object.fromEntries(CONFIG_KEYS.map((k) => [k, pulumiConfig.get(k)]));
const config = parseStackConfig(stack, raw);
const tags = commonTags(stack);
const prefix = physicalName(stack, '').replace(/-$/, '');

const zones = aws.getAvailabilityZonesOutput({
  state: 'available',
  filters: [{ name: 'opt-in-status', values: ['opt-in-not-required'] }],
});
const network = new Network('network', {
  cidrBlock: config.vpcCidr,
  availabilityZones: zones.names,
  zoneCount: config.availabilityZoneCount,
  tags,
});

const database = new Database('database', {
  identifier: prefix,
  vpcId: network.vpcId,
  subnetIds: network.subnetIds,
  clientSecurityGroupId: network.functionSecurityGroupId,
  instanceClass: config.dbInstanceClass,
  allocatedStorageGb: config.dbAllocatedStorageGb,
  maxAllocatedStorageGb: config.dbMaxAllocatedStorageGb,
  multiAz: config.dbMultiAz,
  backupRetentionDays: config.dbBackupRetentionDays,
  deletionProtection: config.deletionProtection,
  logRetentionDays: config.logRetentionDays,
  tags,
});

const secrets = new Secrets('secrets', {
  namePrefix: `${prefix}`,
  recoveryWindowDays: config.secretRecoveryDays,
  tags,
});

// lanyard:rdsProxy: every function connects through RDS Proxy (same secret, same TLS).
const proxy = config.rdsProxy
  ? new DatabaseProxy('database-proxy', {
      proxyName: physicalName(stack, 'db-proxy'),
      vpcId: network.vpcId,
      subnetIds: network.subnetIds,
      clientSecurityGroupId: network.functionSecurityGroupId,
      databaseSecurityGroupId: database.securityGroupId,
      dbInstanceIdentifier: database.instanceIdentifier,
      // The migration function signs in as the master user, the API and admin as lanyard_app.
      secretArns: [database.masterSecretArn, secrets.appDbSecretArn],
      maxConnectionsPercent: PROXY_MAX_CONNECTIONS_PERCENT,
      tags,
    })
  : undefined;

// What every function is told: where things are, never a secret value. Only the migration
// function gets the master user's secret; it creates lanyard_app (DML only) and its secret, which
// the API and admin functions connect with.
const common = {
  DB_HOST: proxy ? proxy.endpoint : database.address,
  DB_PORT: database.port.apply(String),
  DB_NAME: database.databaseName,
  SESSION_KEYS_SECRET_ARN: secrets.sessionKeysSecretArn,
  SIGNING_KEYS_SECRET_ARN: secrets.signingKeysSecretArn,
  LOG_LEVEL: 'info',
  // Named prepared statements would pin each session to one proxy connection (no multiplexing).
  DB_PREPARED_STATEMENTS: String(!proxy),
};
// With a mail domain, the API writes messages From noreply@ that domain (the SES identity).
const mailFrom: Record<string, string> = config.mailDomain
  ? { MAIL_FROM: `Lanyard <noreply@${config.mailDomain}>` }
  : {};
const appEnvironment = { ...common, ...mailFrom, DB_SECRET_ARN: secrets.appDbSecretArn };
const appReadSecretArns = [secrets.appDbSecretArn, secrets.sessionKeysSecretArn, secrets.signingKeysSecretArn];
// Only the migration function (first keys) and the admin function (rotation) write the key secrets.
const keyWriteSecretArns = [secrets.sessionKeysSecretArn, secrets.signingKeysSecretArn];
// Through the VPC endpoint, only these four secrets can be reached at all.
network.restrictSecretsEndpoint('network-secretsmanager-policy', [
  database.masterSecretArn,
  secrets.appDbSecretArn,
  secrets.sessionKeysSecretArn,
  secrets.signingKeysSecretArn,
]);
// The mail relay and the purge reach the database directly (not through the proxy) as the app
// role, and hold no keys.
const directAppDbEnvironment = {
  DB_SECRET_ARN: secrets.appDbSecretArn,
  DB_HOST: database.address,
  DB_PORT: database.port.apply(String),
  DB_NAME: database.databaseName,
  LOG_LEVEL: 'info',
};
const placement = { subnetIds: network.subnetIds, securityGroupId: network.functionSecurityGroupId };

const migrations = new Migrations('migrations', {
  functionName: functionName(stack, 'migrate'),
  bundleDir: bundleDir('migrate'),
  migrationsHash: hashMigrations(path.join(ROOT, 'migrations')),
  ...placement,
  environment: { ...common, DB_SECRET_ARN: database.masterSecretArn, APP_DB_SECRET_ARN: secrets.appDbSecretArn },
  readSecretArns: [
    database.masterSecretArn,
    secrets.appDbSecretArn,
    secrets.sessionKeysSecretArn,
    secrets.signingKeysSecretArn,
  ],
  writeSecretArns: [secrets.appDbSecretArn, ...keyWriteSecretArns],
  logRetentionDays: config.logRetentionDays,
  tags,
  dependsOn: proxy ? [database, network, proxy] : [database, network],
});

const api = new Api('api', {
  functionName: functionName(stack, 'api'),
  bundleDir: bundleDir('api'),
  memoryMb: config.apiMemoryMb,
  reservedConcurrency: config.apiReservedConcurrency,
  ...placement,
  environment: { ...appEnvironment, REFRESH_REUSE_LEEWAY: String(config.refreshReuseLeeway) },
  readSecretArns: appReadSecretArns,
  throttleRateLimit: config.throttleRateLimit,
  throttleBurstLimit: config.throttleBurstLimit,
  logRetentionDays: config.logRetentionDays,
  domainName: config.domainName,
  certificateArn: config.certificateArn,
  edge: config.edge,
  wafRateLimit: config.wafRateLimit,
  wafCredentialRateLimit: config.wafCredentialRateLimit,
  tags,
  dependsOn: [migrations.invocation],
});

// E-mail (lanyard:mailDomain): SES identity with Easy DKIM, the relay in the VPC and the sender
// outside it, joined by an SQS queue (no NAT gateway); see infra/components/mail.ts.
const mail = config.mailDomain
  ? new Mail('mail', {
      domain: config.mailDomain,
      namePrefix: prefix,
      functionName: functionName(stack, 'mail-relay'),
      bundleDir: bundleDir('migrate'),
      senderFunctionName: functionName(stack, 'mail-sender'),
      senderBundleDir: bundleDir('mail'),
      eventsFunctionName: functionName(stack, 'mail-events'),
      sendRate: config.mailSendRate,
      senderConcurrency: config.mailSenderConcurrency,
      vpcId: network.vpcId,
      endpointSecurityGroupId: network.endpointSecurityGroupId,
      ...placement,
      environment: directAppDbEnvironment,
      readSecretArns: [secrets.appDbSecretArn],
      // The relay alone also signs back-channel logout tokens (iss = the API's URL) for the sender.
      relayEnvironment: { SIGNING_KEYS_SECRET_ARN: secrets.signingKeysSecretArn, PUBLIC_URL: api.url },
      relayReadSecretArns: [secrets.signingKeysSecretArn],
      logRetentionDays: config.logRetentionDays,
      tags,
      dependsOn: [migrations.invocation],
    })
  : undefined;

const admin = new Admin('admin', {
  functionName: functionName(stack, 'admin'),
  bundleDir: bundleDir('admin'),
  ...placement,
  // The links in mail the CLI sends (confirmation links, security alerts) point at the API's URL.
  environment: { ...appEnvironment, PUBLIC_URL: api.url },
  readSecretArns: appReadSecretArns,
  writeSecretArns: keyWriteSecretArns,
  mailHandOff: mail && { queueUrl: mail.queueUrl, queueArn: mail.queueArn, from: mailFrom.MAIL_FROM },
  logRetentionDays: config.logRetentionDays,
  tags,
  dependsOn: [migrations.invocation],
});

const audit = new Audit('audit', {
  namePrefix: prefix,
  adminFunctionArn: admin.functionArn,
  retentionDays: config.auditRetentionDays,
  forceDestroy: !config.deletionProtection,
  tags,
});

// The purge deletes rows: the app role (DML only) is enough, so it reads the app role's secret
// and nothing else (no master secret, no key ring).
const retention = new Retention('retention', {
  functionName: functionName(stack, 'prune'),
  bundleDir: bundleDir('migrate'),
  schedule: config.pruneSchedule,
  ...placement,
  environment: {
    ...directAppDbEnvironment,
    ...(config.auditEventRetentionDays > 0 ? { AUDIT_RETENTION_DAYS: String(config.auditEventRetentionDays) } : {}),
  },
  readSecretArns: [secrets.appDbSecretArn],
  logRetentionDays: config.logRetentionDays,
  tags,
  dependsOn: [migrations.invocation],
});

const observability = new Observability('observability', {
  namePrefix: prefix,
  functions: {
    api: { name: api.functionName, timeoutSeconds: API_TIMEOUT_SECONDS },
    migrate: { name: migrations.functionName, timeoutSeconds: 300 },
    admin: { name: admin.functionName, timeoutSeconds: 60 },
    prune: { name: retention.functionName, timeoutSeconds: PRUNE_TIMEOUT_SECONDS },
    ...(mail
      ? {
          mailRelay: { name: mail.relayFunctionName, timeoutSeconds: RELAY_TIMEOUT_SECONDS },
          mailEvents: { name: mail.eventsFunctionName, timeoutSeconds: EVENTS_TIMEOUT_SECONDS },
        }
      : {}),
  },
  mail: mail && {
    ...mail.metrics,
    failedThreshold: config.mailFailedAlarm,
    suppressedThreshold: config.mailSuppressedAlarm,
  },
  apiMetrics: api.metrics,
  apiLogGroupName: api.functionLogGroupName,
  waf:
    config.edge === 'waf'
      ? { webAclName: api.webAclName.apply((n) => n ?? ''), region: aws.getRegionOutput().region }
      : undefined,
  dbInstanceIdentifier: database.instanceIdentifier,
  dbMaxConnections: connectionBudget(config.dbInstanceClass)?.maxConnections,
  dbFreeStorageBytes: Math.max(2, Math.floor(config.dbAllocatedStorageGb * 0.1)) * 1024 ** 3,
  alarmEmail: config.alarmEmail,
  tags,
});

export const apiUrl = api.url;
export const apiDomainTarget = api.domainTarget;
export const apiFunctionName = api.functionName;
export const adminFunctionName = admin.functionName;
export const migrateFunctionName = migrations.functionName;
export const migrationResult = migrations.result;
export const pruneFunctionName = retention.functionName;
export const databaseEndpoint = database.endpoint;
export const databaseProxyEndpoint = proxy?.endpoint;
export const databaseSecretArn = database.masterSecretArn;
export const sessionKeysSecretArn = secrets.sessionKeysSecretArn;
export const signingKeysSecretArn = secrets.signingKeysSecretArn;
export const appDatabaseSecretArn = secrets.appDbSecretArn;
export const edge = config.edge;
export const auditTrailArn = audit.trailArn;
export const auditBucketName = audit.bucketName;
export const alarmTopicArn = observability.alarmTopicArn;
export const vpcId = network.vpcId;
export const mailIdentityArn = mail?.identityArn;
export const mailConfigurationSet = mail?.configurationSetName;
export const mailQueueUrl = mail?.queueUrl;
export const mailDnsRecords = mail?.dnsRecords;
export const mailEventsTopicArn = mail?.eventsTopicArn;
/** Read by `lanyard-admin --stack` to call the admin function in the right region. */
export const region = aws.getRegionOutput().region;

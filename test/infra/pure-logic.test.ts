// infra's pure modules: stack config, connection budget, policy rules, names, subnet plan,
// and the migrations hash that keys the deploy-time migration.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { connectionBudget } from '../../infra/budget';
import { subnetCidr } from '../../infra/components/network';
import { CONFIG_KEYS, parseStackConfig } from '../../infra/config';
import { hashMigrations } from '../../infra/migrations-hash';
import { physicalName } from '../../infra/names';
import { functionPolicy } from '../../infra/policies';
import { findPolicyProblems } from './policy-problems';

describe('parseStackConfig', () => {
  it('defaults to a protected, single-AZ, small production stack', () => {
    expect(parseStackConfig('prod', {})).toEqual({
      stack: 'prod',
      vpcCidr: '10.40.0.0/16',
      availabilityZoneCount: 2,
      dbInstanceClass: 'db.t4g.micro',
      dbAllocatedStorageGb: 20,
      dbMaxAllocatedStorageGb: 100,
      dbMultiAz: false,
      dbBackupRetentionDays: 7,
      deletionProtection: true,
      logRetentionDays: 30,
      apiMemoryMb: 1024,
      apiReservedConcurrency: 20,
      rdsProxy: false,
      throttleRateLimit: 100,
      throttleBurstLimit: 200,
      domainName: undefined,
      certificateArn: undefined,
      alarmEmail: undefined,
      secretRecoveryDays: 7,
      edge: 'httpApi',
      wafRateLimit: 1000,
      wafCredentialRateLimit: 100,
      auditRetentionDays: 365,
      refreshReuseLeeway: 30,
      pruneSchedule: 'rate(1 hour)',
      auditEventRetentionDays: 0,
      mailSendRate: 14,
      mailSenderConcurrency: 2,
      mailFailedAlarm: 1,
      mailSuppressedAlarm: 10,
    });
  });

  it('rejects values AWS would reject later, with the key in the message', () => {
    const bad: Array<[Record<string, string>, RegExp]> = [
      [{ logRetentionDays: '10' }, /lanyard:logRetentionDays must be one of/],
      [{ edge: 'cloudfront' }, /lanyard:edge must be one of httpApi, waf \(got "cloudfront"\)/],
      [{ wafRateLimit: '5' }, /lanyard:wafRateLimit must be an integer from 10 to/],
      [{ dbMultiAz: 'yes' }, /lanyard:dbMultiAz must be true or false/],
      [{ dbBackupRetentionDays: '0' }, /lanyard:dbBackupRetentionDays must be an integer from 1 to 35/],
      [{ secretRecoveryDays: '3' }, /must be 0 or from 7 to 30/],
      [{ domainName: 'auth.example.com' }, /go together/],
      [{ vpcCidr: '10.0.0.0/8' }, /vpcCidr/],
      [{ apiReservedConcurrency: '0' }, /would stop the API/],
      [{ apiReservedConcurrency: '500' }, /exceeds what db.t4g.micro can serve/],
      [{ refreshReuseLeeway: '61' }, /lanyard:refreshReuseLeeway must be an integer from 0 to 60 \(got "61"\)/],
      [{ refreshReuseLeeway: '-1' }, /lanyard:refreshReuseLeeway must be an integer from 0 to 60/],
      [{ pruneSchedule: 'hourly' }, /lanyard:pruneSchedule must be an EventBridge rate\(…\) or cron\(…\) expression/],
      [{ auditEventRetentionDays: '-1' }, /lanyard:auditEventRetentionDays must be an integer from 0 to 36500/],
      [{ mailSenderConcurrency: '1' }, /lanyard:mailSenderConcurrency must be an integer from 2 to 100/],
      [{ mailSendRate: '0' }, /lanyard:mailSendRate must be an integer from 1 to 10000/],
    ];
    for (const [raw, message] of bad) expect(() => parseStackConfig('x', raw)).toThrow(message);
    expect(parseStackConfig('x', { apiReservedConcurrency: '-1' }).apiReservedConcurrency).toBe(-1);
  });
});

describe('Pulumi.yaml and Pulumi.dev.yaml', () => {
  const root = path.resolve(__dirname, '../..');
  /** The flat `lanyard:<key>:` blocks of a Pulumi file: key → its lines. */
  const blocks = (file: string) => {
    const text = fs.readFileSync(path.join(root, file), 'utf8');
    return Object.fromEntries(
      [...text.matchAll(/^ {2}lanyard:(\w+):(.*)$((?:\n {4}.*)*)/gm)].map((m) => [
        m[1],
        { inline: m[2].trim(), body: m[3] },
      ]),
    );
  };

  it('declare every key the program reads, with the defaults parseStackConfig applies', () => {
    const declared = blocks('Pulumi.yaml');
    expect(Object.keys(declared).sort()).toEqual([...CONFIG_KEYS].sort());
    const defaults = parseStackConfig('x', {}) as unknown as Record<string, unknown>;
    for (const key of CONFIG_KEYS) {
      const text = /\n {4}default: (.*)/.exec(declared[key].body)?.[1];
      expect(text, key).toBeDefined();
      expect(/\n {4}description: ./.test(declared[key].body), key).toBe(true);
      const value =
        text === '""'
          ? undefined
          : text === 'true' || text === 'false'
            ? text === 'true'
            : /^-?\d+$/.test(text!)
              ? Number(text)
              : text;
      expect(value, key).toEqual(defaults[key]);
    }
  });

  it('ship an example dev stack that passes the checks and can be torn down', () => {
    const raw = Object.fromEntries(Object.entries(blocks('Pulumi.dev.yaml')).map(([k, v]) => [k, v.inline]));
    const config = parseStackConfig('dev', raw);
    expect(config).toMatchObject({ deletionProtection: false, secretRecoveryDays: 0 });
  });
});

describe('connectionBudget', () => {
  it("follows RDS's max_connections formula and keeps room for the other functions and operators", () => {
    expect(connectionBudget('db.t4g.micro')).toEqual({ maxConnections: 101, forApi: 91 });
    expect(connectionBudget('db.t4g.medium')!.maxConnections).toBe(405);
    expect(connectionBudget('db.x2g.16xlarge')).toBeUndefined();
  });
});

describe('findPolicyProblems', () => {
  const clean = functionPolicy({
    logGroupArn: 'arn:aws:logs:r:1:log-group:/aws/lambda/f',
    readSecretArns: ['arn:aws:secretsmanager:r:1:secret:a'],
  });

  it('passes the function policy', () => {
    expect(findPolicyProblems(clean)).toEqual([]);
  });

  it('catches wildcard actions, wildcard secrets and stray "*" resources', () => {
    expect(
      findPolicyProblems({
        Version: '2012-10-17',
        Statement: [{ Effect: 'Allow', Action: 's3:*', Resource: 'arn:aws:s3:::b' }],
      }),
    ).toEqual(['statement 0: wildcard action s3:*']);
    expect(
      findPolicyProblems(
        functionPolicy({ logGroupArn: 'arn:l', readSecretArns: ['arn:aws:secretsmanager:r:1:secret:*'] }),
      ),
    ).toEqual(['ReadSecrets: secret access must name exact ARNs (got arn:aws:secretsmanager:r:1:secret:*)']);
    expect(
      findPolicyProblems({
        Version: '2012-10-17',
        Statement: [{ Effect: 'Allow', Action: 'logs:PutLogEvents', Resource: '*' }],
      }),
    ).toEqual(['statement 0: "*" resource for actions other than Lambda\'s VPC ENI management']);
  });
});

describe('names and addresses', () => {
  it('names resources lanyard-<stack>-<suffix> within AWS limits', () => {
    expect(physicalName('Prod_EU', 'api')).toBe('lanyard-prod-eu-api');
    expect(() => physicalName('x'.repeat(60), 'api')).toThrow(/too long/);
  });

  it('plans one non-overlapping subnet per zone', () => {
    expect([0, 1, 2].map((i) => subnetCidr('10.40.0.0/16', i))).toEqual([
      '10.40.0.0/20',
      '10.40.16.0/20',
      '10.40.32.0/20',
    ]);
    expect(subnetCidr('192.168.8.0/24', 1)).toBe('192.168.8.16/28');
  });
});

describe('hashMigrations', () => {
  it('changes when a migration file is added or edited, and only then', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'lanyard-migrations-'));
    fs.cpSync(path.resolve(__dirname, '../../migrations'), dir, { recursive: true });
    const original = hashMigrations(dir);
    expect(original).toBe(hashMigrations(path.resolve(__dirname, '../../migrations')));
    expect(hashMigrations(dir)).toBe(original); // stable
    const first = fs.readdirSync(dir).find((f) => /^\d{4}-/.test(f))!;
    fs.appendFileSync(path.join(dir, first), '\n// edited\n');
    const edited = hashMigrations(dir);
    expect(edited).not.toBe(original);
    fs.writeFileSync(path.join(dir, '9999-new.ts'), 'export async function up() {}\n');
    expect(hashMigrations(dir)).not.toBe(edited);
    fs.rmSync(dir, { recursive: true, force: true });
  });
});

// TLS to the database as deployed: a PostgreSQL that refuses unencrypted connections (as
// rds.force_ssl=1 does), a server certificate from a throwaway CA, and the Lambda database path
// (service/aws/database.ts) verifying it against DB_CA_FILE — chain and host name, not merely
// encryption. A wrong CA or a certificate for another host must fail to connect.
import { execFileSync } from 'node:child_process';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { sql } from 'kysely';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openLambdaDatabase } from '../../service/aws/database';
import type { SecretStore } from '../../service/aws/secret-store';
import { loadConfig } from '../../service/config';
import { freePort, initCluster, postgresIds, startCluster, stopCluster } from '../../service/db/local-postgres';

const PASSWORD = 'tls-test-password';
let dir: string;
let dataDir: string;
let port: number;

const openssl = (args: string[]) => execFileSync('openssl', args, { cwd: dir, stdio: ['ignore', 'ignore', 'pipe'] });

/** A CA and a server certificate it signs for `hosts` (DNS names or IPs). */
function makeCa(name: string) {
  openssl([
    'req',
    '-x509',
    '-newkey',
    'rsa:2048',
    '-nodes',
    '-days',
    '2',
    '-subj',
    `/CN=${name}`,
    '-keyout',
    `${name}.key`,
    '-out',
    `${name}.pem`,
  ]);
}
function makeServerCert(name: string, ca: string, hosts: string[]) {
  const san = hosts.map((h) => (/^\d/.test(h) ? `IP:${h}` : `DNS:${h}`)).join(',');
  openssl([
    'req',
    '-newkey',
    'rsa:2048',
    '-nodes',
    '-subj',
    `/CN=${hosts[0]}`,
    '-keyout',
    `${name}.key`,
    '-out',
    `${name}.csr`,
  ]);
  return fs
    .writeFile(path.join(dir, `${name}.ext`), `subjectAltName=${san}\n`)
    .then(() =>
      openssl([
        'x509',
        '-req',
        '-in',
        `${name}.csr`,
        '-CA',
        `${ca}.pem`,
        '-CAkey',
        `${ca}.key`,
        '-CAcreateserial',
        '-days',
        '2',
        '-extfile',
        `${name}.ext`,
        '-out',
        `${name}.crt`,
      ]),
    );
}

beforeAll(async () => {
  dir = await fs.mkdtemp(path.join(os.tmpdir(), 'lanyard-tls-'));
  await fs.chmod(dir, 0o755);
  makeCa('ca');
  makeCa('other-ca');
  // The certificate names only `localhost`: 127.0.0.1 reaches the same server under a name it lacks.
  await makeServerCert('server', 'ca', ['localhost']);
  dataDir = path.join(dir, 'data');
  await initCluster(dataDir, PASSWORD);
  // Server key and certificate inside the data directory, owned by the server's user, key 0600.
  const ids = await postgresIds();
  for (const f of ['server.crt', 'server.key']) {
    await fs.copyFile(path.join(dir, f), path.join(dataDir, f));
    if (ids.uid !== undefined) await fs.chown(path.join(dataDir, f), ids.uid, ids.gid!);
  }
  await fs.chmod(path.join(dataDir, 'server.key'), 0o600);
  // TLS only: like rds.force_ssl=1, an unencrypted connection is refused.
  await fs.writeFile(
    path.join(dataDir, 'pg_hba.conf'),
    'hostssl all all 127.0.0.1/32 scram-sha-256\nhostnossl all all 127.0.0.1/32 reject\n',
  );
  port = await freePort();
  await startCluster(dataDir, port, ['-c ssl=on']);
}, 60_000);

afterAll(async () => {
  if (dataDir) await stopCluster(dataDir);
  if (dir) await fs.rm(dir, { recursive: true, force: true });
});

function lambdaDb(host: string, caFile: string) {
  const store: SecretStore = {
    get: async () => JSON.stringify({ username: 'postgres', password: PASSWORD }),
    put: async () => undefined,
  };
  const config = loadConfig({
    LOG_LEVEL: 'silent',
    DB_SECRET_ARN: 'arn:aws:secretsmanager:eu-west-1:123456789012:secret:rds!db-tls',
    DB_HOST: host,
    DB_PORT: String(port),
    DB_NAME: 'postgres',
    DB_CA_FILE: caFile,
    AWS_REGION: 'eu-west-1',
    AWS_ACCESS_KEY_ID: 'AKIDEXAMPLE',
    AWS_SECRET_ACCESS_KEY: 'secret',
  });
  const database = openLambdaDatabase(config, { applicationName: 'lanyard-tls-test', store });
  afterAll(() => database.destroy());
  return database;
}

describe('the Lambda database connection over TLS', () => {
  it('the server refuses an unencrypted connection (the force_ssl posture)', async () => {
    const client = new pg.Client({
      host: '127.0.0.1',
      port,
      user: 'postgres',
      password: PASSWORD,
      database: 'postgres',
      ssl: false,
    });
    await expect(client.connect()).rejects.toThrow(/no encryption|pg_hba\.conf rejects/);
  });

  it('connects with the certificate verified against DB_CA_FILE, and the session is encrypted', async () => {
    const { db } = lambdaDb('localhost', path.join(dir, 'ca.pem'));
    const { rows } = await sql<{ ssl: boolean }>`select ssl from pg_stat_ssl where pid = pg_backend_pid()`.execute(db);
    expect(rows).toEqual([{ ssl: true }]);
  });

  it('refuses a server whose certificate another CA signed', async () => {
    const { db } = lambdaDb('localhost', path.join(dir, 'other-ca.pem'));
    await expect(sql`select 1`.execute(db)).rejects.toThrow(/self.signed|unable to verify|unable to get local issuer/i);
  });

  it('refuses a certificate that does not name the host connected to', async () => {
    const { db } = lambdaDb('127.0.0.1', path.join(dir, 'ca.pem'));
    await expect(sql`select 1`.execute(db)).rejects.toThrow(/IP: 127\.0\.0\.1 is not in the cert's list/);
  });
});

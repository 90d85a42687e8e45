// A local stand-in for the Secrets Manager JSON API (GetSecretValue, PutSecretValue) that checks
// each request is SigV4-signed for secretsmanager, and counts calls. `failNext` makes the next
// requests fail (an HTTP error answer, or a connection dropped without an answer) before it serves.
import http from 'node:http';
import type { AddressInfo } from 'node:net';

export interface FakeSecretsManager {
  url: string;
  secrets: Map<string, string | undefined>;
  calls: Array<{ target: string; secretId: string; authorization: string; token?: string }>;
  /** Consumed one per request: an error status with an AWS error type, or 'drop' (no answer). */
  failNext: Array<{ status: number; type: string } | 'drop'>;
  close(): Promise<void>;
}

export async function startFakeSecretsManager(
  initial: Record<string, string | undefined> = {},
): Promise<FakeSecretsManager> {
  const secrets = new Map(Object.entries(initial));
  const calls: FakeSecretsManager['calls'] = [];
  const failNext: FakeSecretsManager['failNext'] = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      const reply = (status: number, body: object) => {
        res.writeHead(status, { 'content-type': 'application/x-amz-json-1.1' });
        res.end(JSON.stringify(body));
      };
      const target = String(req.headers['x-amz-target'] ?? '').replace('secretsmanager.', '');
      const authorization = String(req.headers.authorization ?? '');
      const payload = JSON.parse(Buffer.concat(chunks).toString('utf8') || '{}');
      calls.push({ target, secretId: payload.SecretId, authorization, token: payload.ClientRequestToken });
      const failure = failNext.shift();
      if (failure === 'drop') return req.socket.destroy();
      if (failure) return reply(failure.status, { __type: failure.type, message: 'injected failure' });
      if (
        !/^AWS4-HMAC-SHA256 Credential=\w+\/\d{8}\/[\w-]+\/secretsmanager\/aws4_request, SignedHeaders=[\w;-]+, Signature=[0-9a-f]{64}$/.test(
          authorization,
        )
      ) {
        return reply(400, { __type: 'IncompleteSignatureException', message: 'bad signature' });
      }
      if (!secrets.has(payload.SecretId)) {
        return reply(400, {
          __type: 'com.amazonaws.secretsmanager#ResourceNotFoundException',
          message: "Secrets Manager can't find the specified secret.",
        });
      }
      if (target === 'GetSecretValue') {
        const value = secrets.get(payload.SecretId);
        if (value === undefined) {
          return reply(400, {
            __type: 'ResourceNotFoundException',
            message: "Secrets Manager can't find the specified secret value for staging label: AWSCURRENT",
          });
        }
        return reply(200, { ARN: payload.SecretId, SecretString: value, VersionStages: ['AWSCURRENT'] });
      }
      if (target === 'PutSecretValue') {
        secrets.set(payload.SecretId, payload.SecretString);
        return reply(200, { ARN: payload.SecretId, VersionId: payload.ClientRequestToken ?? 'v' });
      }
      return reply(400, { __type: 'InvalidAction', message: target });
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/`,
    secrets,
    calls,
    failNext,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

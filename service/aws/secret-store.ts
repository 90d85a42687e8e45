// Secrets Manager behind a two-method interface: a small SigV4 JSON client used on Lambda, and
// the seam the tests replace with an in-memory store. Values are read at init and cached.
import https from 'node:https';
import http from 'node:http';
import type { AwsConfig } from '../config';
import { signRequest, type AwsCredentials } from './sigv4';

export interface SecretStore {
  /** The AWSCURRENT value, or undefined when the secret has no value yet. */
  get(arn: string): Promise<string | undefined>;
  /** Store a new AWSCURRENT value; `token` (32–64 characters) makes a retried put idempotent. */
  put(arn: string, value: string, token?: string): Promise<void>;
}

export class SecretsManagerError extends Error {
  constructor(
    /** The AWS error type, e.g. AccessDeniedException. */
    readonly type: string,
    message: string,
    readonly statusCode: number,
  ) {
    super(message);
    this.name = 'SecretsManagerError';
  }
}

export interface SecretsManagerOptions {
  region: string;
  credentials: AwsCredentials;
  /** Default https://secretsmanager.<region>.amazonaws.com (the VPC endpoint answers it privately). */
  endpoint?: string;
  timeoutMs?: number;
}

export const secretsManagerOptions = (aws: AwsConfig): SecretsManagerOptions => ({
  region: aws.region,
  credentials: aws.credentials,
  endpoint: aws.secretsManagerEndpoint,
});

// One kept-alive connection per instance: the second call skips the TLS handshake.
const agent = new https.Agent({ keepAlive: true, maxSockets: 2 });

export function secretsManagerStore(options: SecretsManagerOptions): SecretStore {
  const url = new URL(options.endpoint ?? `https://secretsmanager.${options.region}.amazonaws.com/`);
  /** The JSON members this client reads from Secrets Manager answers (success and error bodies). */
  interface SecretsManagerAnswer {
    SecretString?: string;
    SecretBinary?: string;
    __type?: string;
    message?: string;
    Message?: string;
  }
  const call = async (target: string, payload: object): Promise<SecretsManagerAnswer> => {
    const body = JSON.stringify(payload);
    const headers = signRequest({
      method: 'POST',
      url,
      headers: { 'content-type': 'application/x-amz-json-1.1', 'x-amz-target': `secretsmanager.${target}` },
      body,
      region: options.region,
      service: 'secretsmanager',
      credentials: options.credentials,
    });
    const { statusCode, text } = await post(url, headers, body, options.timeoutMs ?? 5_000);
    const parsed: SecretsManagerAnswer = text ? JSON.parse(text) : {};
    if (statusCode >= 200 && statusCode < 300) return parsed;
    // {"__type":"com.amazonaws.secretsmanager#ResourceNotFoundException","message":"…"}
    const type = String(parsed.__type ?? 'UnknownError')
      .split('#')
      .pop()!;
    throw new SecretsManagerError(
      type,
      `Secrets Manager ${target}: ${type}: ${parsed.message ?? parsed.Message ?? statusCode}`,
      statusCode,
    );
  };
  return {
    async get(arn) {
      try {
        const out = await call('GetSecretValue', { SecretId: arn });
        return (
          out.SecretString ?? (out.SecretBinary ? Buffer.from(out.SecretBinary, 'base64').toString('utf8') : undefined)
        );
      } catch (err) {
        // A secret created without a value (no AWSCURRENT version yet) answers this too.
        if (err instanceof SecretsManagerError && err.type === 'ResourceNotFoundException') return undefined;
        throw err;
      }
    },
    async put(arn, value, token) {
      await call('PutSecretValue', {
        SecretId: arn,
        SecretString: value,
        ...(token ? { ClientRequestToken: token } : {}),
      });
    },
  };
}

function post(
  url: URL,
  headers: Record<string, string>,
  body: string,
  timeoutMs: number,
): Promise<{ statusCode: number; text: string }> {
  const transport = url.protocol === 'http:' ? http : https;
  return new Promise((resolve, reject) => {
    const req = transport.request(
      url,
      {
        method: 'POST',
        headers: { ...headers, 'content-length': String(Buffer.byteLength(body)) },
        agent: url.protocol === 'https:' ? agent : undefined,
        timeout: timeoutMs,
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => resolve({ statusCode: res.statusCode ?? 0, text: Buffer.concat(chunks).toString('utf8') }));
        res.on('error', reject);
      },
    );
    req.on('timeout', () => req.destroy(new Error(`Secrets Manager did not answer within ${timeoutMs} ms`)));
    req.on('error', reject);
    req.end(body);
  });
}

/**
 * One secret value, fetched once and cached for the life of the instance. `refresh()` re-fetches;
 * calls made while a fetch is in flight share it; a failed fetch is not cached, so the next call retries.
 */
export class CachedSecret<T> {
  #current: Promise<T> | undefined;
  #inFlight: Promise<T> | undefined;

  constructor(
    private readonly store: SecretStore,
    readonly arn: string,
    private readonly parse: (text: string, arn: string) => T,
  ) {}

  get(): Promise<T> {
    return this.#current ?? this.refresh();
  }

  refresh(): Promise<T> {
    if (this.#inFlight) return this.#inFlight;
    const fetching = this.#load().finally(() => {
      if (this.#inFlight === fetching) this.#inFlight = undefined;
    });
    this.#inFlight = fetching;
    fetching.then(
      () => {
        this.#current = fetching;
      },
      () => undefined, // keep the previous value (if any); the caller sees the error
    );
    return fetching;
  }

  async #load(): Promise<T> {
    const text = await this.store.get(this.arn);
    if (text === undefined) throw new Error(`secret ${this.arn} has no value`);
    return this.parse(text, this.arn);
  }
}

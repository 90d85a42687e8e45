// Secrets Manager behind a two-method interface: a small SigV4 JSON client used on Lambda, and
// the seam the tests replace with an in-memory store. Values are read at init and cached.
// Throttling, 5xx answers and network errors are retried a bounded number of times with "full
// jitter" backoff (AWS Architecture Blog, "Exponential Backoff And Jitter"; the SDKs' standard
// retry mode): each wait is random in [0, min(cap, base·2^attempt)), so instances that failed
// together do not retry together.
import { randomUUID } from 'node:crypto';
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
  retry?: Partial<RetryPolicy>;
}

export interface RetryPolicy {
  /** Attempts in all, the first included (the SDKs' standard mode: 3). */
  maxAttempts: number;
  baseDelayMs: number;
  maxDelayMs: number;
  /** [0, 1); tests pin it. */
  random: () => number;
  sleep: (ms: number) => Promise<void>;
}

export const DEFAULT_RETRY: RetryPolicy = {
  maxAttempts: 3,
  baseDelayMs: 100,
  maxDelayMs: 2_000,
  random: Math.random,
  sleep: (ms) => new Promise((resolve) => setTimeout(resolve, ms)),
};

/** Full jitter: a wait drawn from [0, min(cap, base·2^retry)) before retry number `retry` (0-based). */
export const fullJitterDelay = (policy: RetryPolicy, retry: number): number =>
  Math.floor(policy.random() * Math.min(policy.maxDelayMs, policy.baseDelayMs * 2 ** retry));

const THROTTLING_TYPES = new Set([
  'ThrottlingException',
  'Throttling',
  'TooManyRequestsException',
  'RequestLimitExceeded',
  'RequestThrottled',
  'RequestThrottledException',
]);

/** Worth another attempt: throttled, a server-side failure, or no answer at all (network, timeout). */
export function isRetryable(err: unknown): boolean {
  if (err instanceof SecretsManagerError) {
    return err.statusCode === 429 || err.statusCode >= 500 || THROTTLING_TYPES.has(err.type);
  }
  return err instanceof NetworkError;
}

/** The request got no HTTP answer (connection refused or reset, DNS, timeout). */
export class NetworkError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'NetworkError';
  }
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
  const retry: RetryPolicy = { ...DEFAULT_RETRY, ...options.retry };
  const call = async (target: string, payload: object): Promise<SecretsManagerAnswer> => {
    for (let attempt = 1; ; attempt++) {
      try {
        return await callOnce(target, payload);
      } catch (err) {
        if (attempt >= retry.maxAttempts || !isRetryable(err)) throw err;
        await retry.sleep(fullJitterDelay(retry, attempt - 1));
      }
    }
  };
  const callOnce = async (target: string, payload: object): Promise<SecretsManagerAnswer> => {
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
    let parsed: SecretsManagerAnswer;
    try {
      parsed = text ? JSON.parse(text) : {};
    } catch {
      // A load balancer's HTML 502/503 page, say: typed by status so 5xx is retried.
      parsed = { __type: statusCode >= 500 ? 'ServiceUnavailable' : 'UnknownError', message: `HTTP ${statusCode}` };
    }
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
      // Always a request token, so a retry after a lost answer cannot store a second version.
      await call('PutSecretValue', { SecretId: arn, SecretString: value, ClientRequestToken: token ?? randomUUID() });
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
        res.on('error', (err) => reject(new NetworkError(`Secrets Manager: ${err.message}`, { cause: err })));
      },
    );
    req.on('timeout', () => req.destroy(new NetworkError(`Secrets Manager did not answer within ${timeoutMs} ms`)));
    req.on('error', (err) =>
      reject(err instanceof NetworkError ? err : new NetworkError(`Secrets Manager: ${err.message}`, { cause: err })),
    );
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

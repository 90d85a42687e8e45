// Domain errors: thrown by domain functions, mapped to HTTP by the error handler and to exit
// code 1 by the CLI. Messages are safe to show to the caller (never a secret).
export type DomainErrorKind = 'invalid' | 'not_found' | 'conflict' | 'forbidden';

export class DomainError extends Error {
  constructor(
    readonly kind: DomainErrorKind,
    message: string,
    /** Field-level detail, e.g. { notification_email: ['must be an email you have verified'] } */
    readonly details?: Record<string, string[]>,
    /** The body key on the API: GitLab answers most refusals {"message": …}, a bad parameter {"error": …}. */
    readonly key: 'message' | 'error' = 'message',
  ) {
    super(message);
    this.name = 'DomainError';
  }
}

export const invalid = (message: string, details?: Record<string, string[]>) =>
  new DomainError('invalid', message, details);
export const notFound = (message: string) => new DomainError('not_found', message);
export const conflict = (message: string) => new DomainError('conflict', message);

/**
 * Too many failed credential checks: try again after `retryAfterSeconds`. A domain refusal, so
 * oauth/ and routes throw it without knowing any wire format; the error handler maps it once.
 */
export class RateLimitedError extends Error {
  constructor(readonly retryAfterSeconds: number) {
    super('rate limited');
    this.name = 'RateLimitedError';
  }
}

/** Map a PostgreSQL unique violation on a known index to a conflict with a readable message. */
export function uniqueViolation(err: unknown, messages: Record<string, string>): DomainError | undefined {
  const e = err as { code?: string; constraint?: string };
  if (e?.code !== '23505') return undefined;
  const message = (e.constraint && messages[e.constraint]) || 'already exists';
  return conflict(message);
}

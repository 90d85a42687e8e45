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
/**
 * An invalid value of one input (`name`, `scopes`, `redirect_uri`, `expires_at`, …): `details`
 * names it, so a form shows the message at that field without reading the message.
 */
export const invalidField = (field: string, message: string) =>
  new DomainError('invalid', message, { [field]: [message] });
/** The input an error concerns, when it names one. */
export const fieldOf = (err: DomainError): string | undefined => Object.keys(err.details ?? {})[0];
export const notFound = (message: string) => new DomainError('not_found', message);
export const conflict = (message: string) => new DomainError('conflict', message);

/**
 * Too many of something that is not a credential check (e.g. confirmation e-mails an hour): thrown
 * inside the transaction that would have sent it, so nothing is written; the page or the CLI that
 * offers the action catches it and says when to try again.
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

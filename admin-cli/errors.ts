// The CLI's error classes. A UserError is the operator's to fix (exit 1, one line, no stack);
// anything else that escapes a command is a bug (exit 2).
import { ConfigError } from '../service/config';
import { DatabaseUnavailableError } from '../service/db/open';
import { DomainError } from '../service/domain/errors';

export class UserError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'UserError';
  }
}

/** A yargs usage problem (unknown command, missing option): also the operator's to fix. */
export class UsageError extends UserError {
  constructor(message: string) {
    super(message);
    this.name = 'UsageError';
  }
}

export const EXIT_OK = 0;
export const EXIT_USER_ERROR = 1;
export const EXIT_FAILURE = 2;

/**
 * Errors the operator can act on: their input (domain rules, usage), or the environment they
 * pointed us at (an unreachable database, a bad setting). Each carries a safe one-line message.
 */
export function isUserFacing(err: unknown): err is Error {
  return (
    err instanceof UserError ||
    err instanceof DomainError ||
    err instanceof DatabaseUnavailableError ||
    err instanceof ConfigError
  );
}

/** First line only: a user error is one line on stderr. */
export const oneLine = (message: string): string => message.split('\n')[0].trim();

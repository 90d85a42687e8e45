// Recognise "the database is unavailable" (down, restarting, unreachable, out of connections, or
// up but unable to write: disk full, out of memory, read-only) among the errors pg raises, so the service answers 503 + Retry-After instead of a 500. The pool
// reconnects by itself on the next query: nothing needs a restart once PostgreSQL is back.

/** Socket-level failures (Node error codes). */
const NETWORK_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EPIPE',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EHOSTUNREACH',
]);

/**
 * SQLSTATEs meaning the server cannot serve us right now: class 08 (connection exception),
 * 57P01–57P03 (shutdown, crash, starting up), 3D000 (the database is gone, e.g. being restored);
 * and the states where it answers but cannot write (issue 22: these were a 500 with a stack per
 * request): class 53 (insufficient resources: 53100 disk full, 53200 out of memory, 53300 too
 * many connections, 53400 configuration limit), 25006 (read-only transaction: a standby, or
 * default_transaction_read_only during maintenance), 58030 (I/O error).
 */
const UNAVAILABLE_SQLSTATES = /^(08...|53...|57P0[1-3]|25006|3D000|58030)$/;

/** pg's own messages for a connection that died or could not be made in time. */
const POOL_MESSAGES =
  /Connection terminated|timeout exceeded when trying to connect|connection timeout|Client has encountered a connection error|terminating connection due to administrator command/i;

export function isDatabaseUnavailable(err: unknown): boolean {
  for (
    let e = err as { code?: unknown; message?: unknown; cause?: unknown } | undefined, depth = 0;
    e && depth < 4;
    depth++
  ) {
    if (typeof e.code === 'string' && (NETWORK_CODES.has(e.code) || UNAVAILABLE_SQLSTATES.test(e.code))) return true;
    if (typeof e.message === 'string' && POOL_MESSAGES.test(e.message)) return true;
    // AggregateError (a host with several addresses, all refused) and wrapped causes.
    const inner = (e as { errors?: unknown[] }).errors;
    if (Array.isArray(inner) && inner.some(isDatabaseUnavailable)) return true;
    e = e.cause as typeof e;
  }
  return false;
}

/** Seconds a client should wait before retrying: recovery takes well under a second once PostgreSQL is up. */
export const UNAVAILABLE_RETRY_AFTER_SECONDS = 5;

// The back-channel logout sender: drains backchannel_logout_deliveries, next to the mail outbox
// and from the same loop (server.ts) and relay (lambda-migrate.ts). Each claimed delivery gets a
// logout token signed now with the current key (same jti on every attempt) and POSTed as
// `logout_token=…` (Back-Channel Logout 1.0 §2.5). 2xx is done. A timeout, a network error, a
// redirect (never followed: the token goes only to the registered URI), 408, 429 or 5xx is
// retried with exponential backoff until the last attempt, which leaves the delivery failed
// (`lanyard-admin logout-deliveries list --status failed`); any other 4xx is the relying party
// refusing the token, failed at once. Nothing here runs in a person's request.
import type { Db } from '../db/schema';
import {
  type ClaimedLogout,
  claimDueLogouts,
  logoutTokenClaims,
  markLogoutAttemptFailed,
  markLogoutSent,
} from '../domain/backchannel-logout';
import { retryDelaySeconds } from '../domain/mail/outbox';
import { signJwt, type SigningKeySource } from '../domain/signing-keys';
import { type PostAnswer, postLogoutToken, retryableStatus } from './logout-post';

/** How one logout token leaves: a direct POST, or (deployed) a hand-off to the sender function. */
export type LogoutPoster = (request: { uri: string; body: string; id: number }) => Promise<PostAnswer>;

export interface LogoutSenderOptions {
  db: Db;
  signingKeys: SigningKeySource;
  /** The logout token's iss: PUBLIC_URL. */
  issuer: string;
  maxAttempts: number;
  concurrency: number;
  leaseSeconds?: number;
  retry?: { baseSeconds?: number; maxSeconds?: number };
  /** Default: postLogoutToken (a direct POST with a short timeout). */
  post?: LogoutPoster;
  timeoutMs?: number;
  onResult?(result: LogoutResult): void;
}

export interface LogoutResult {
  id: number;
  clientId: string;
  attempt: number;
  outcome: 'sent' | 'retry' | 'failed';
  detail: string;
}

export interface LogoutRoundReport {
  claimed: number;
  sent: number;
  retried: number;
  failed: number;
}

/** One round: claim due deliveries, sign and POST each, record the outcome. */
export async function drainLogoutsOnce(options: LogoutSenderOptions): Promise<LogoutRoundReport> {
  const claimed = await claimDueLogouts(options.db, {
    limit: options.concurrency * 8,
    leaseSeconds: options.leaseSeconds ?? 300,
    maxAttempts: options.maxAttempts,
  });
  const report: LogoutRoundReport = { claimed: claimed.length, sent: 0, retried: 0, failed: 0 };
  if (!claimed.length) return report;
  const keys = await options.signingKeys.load();
  let next = 0;
  const worker = async () => {
    while (next < claimed.length) {
      const delivery = claimed[next++];
      const token = await signJwt(keys, logoutTokenClaims(delivery, options.issuer), 'logout+jwt');
      const outcome = await deliver(options, delivery, token);
      report[outcome === 'sent' ? 'sent' : outcome === 'retry' ? 'retried' : 'failed']++;
    }
  };
  await Promise.all(Array.from({ length: Math.min(options.concurrency, claimed.length) }, worker));
  return report;
}

async function deliver(
  options: LogoutSenderOptions,
  delivery: ClaimedLogout,
  token: string,
): Promise<LogoutResult['outcome']> {
  const post = options.post ?? ((r) => postLogoutToken(r.uri, r.body, options.timeoutMs));
  const answer = await post({
    uri: delivery.uri,
    body: new URLSearchParams({ logout_token: token }).toString(),
    id: delivery.id,
  });
  const result = (outcome: LogoutResult['outcome'], detail: string) => {
    options.onResult?.({ id: delivery.id, clientId: delivery.client_id, attempt: delivery.attempts, outcome, detail });
    return outcome;
  };
  if ('status' in answer && answer.status >= 200 && answer.status < 300) {
    await markLogoutSent(options.db, delivery.id, answer.status);
    return result('sent', `HTTP ${answer.status}`);
  }
  const status = 'status' in answer ? answer.status : null;
  const error =
    status === null
      ? (answer as { error: string }).error
      : status >= 300 && status < 400
        ? `HTTP ${status}: redirect not followed`
        : `HTTP ${status}`;
  const left = await markLogoutAttemptFailed(options.db, delivery.id, {
    error,
    responseStatus: status,
    permanent: status !== null && !retryableStatus(status),
    retryInSeconds: retryDelaySeconds(delivery.attempts, options.retry),
    maxAttempts: options.maxAttempts,
  });
  return result(left === 'failed' ? 'failed' : 'retry', error);
}

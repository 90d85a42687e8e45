// The sender: drains the outbox through a transport. Each round claims a batch (SKIP LOCKED, so
// several senders share the work), renders the messages (the same bytes on every attempt:
// domain/mail/render.ts), then hands them to the transport with at most `concurrency` in flight.
// A message is marked sent only after the transport accepted it: a sender killed in between leaves
// it claimed, and once the claim lapses another round sends the same bytes, same
// Message-ID, again (at-least-once; a duplicate is recognisable). A failure goes back to pending
// after an exponential backoff with jitter, until the last attempt, which leaves it failed.
// A message to a suppressed address is held back by the claim itself (never offered to the
// transport); a permanent refusal of the recipient (SMTP 5xx at RCPT TO) is a hard bounce and
// suppresses the address (domain/mail/suppressions.ts). MAIL_SEND_RATE paces the hand-overs.
import type { Db } from '../db/schema';
import {
  type ClaimedMail,
  claimDueMail,
  markMailAttemptFailed,
  markMailSent,
  retryDelaySeconds,
} from '../domain/mail/outbox';
import { envelopeAddress, renderMail } from '../domain/mail/render';
import { recordSuppression, SUPPRESSED_ERROR } from '../domain/mail/suppressions';
import type { SendRateLimiter } from './send-rate';
import { type MailTransport, TransportError } from './transport';

export interface SenderOptions {
  db: Db;
  transport: MailTransport;
  /** MAIL_FROM: the From of messages queued without one. */
  from: string;
  maxAttempts: number;
  /** Messages in the transport's hands at once. */
  concurrency: number;
  /** Messages claimed at once, and recorded sent at once (default BATCH_PER_SLOT × concurrency). */
  batchSize?: number;
  /** How long a claim holds before another sender may take the message over (default 300 s). */
  leaseSeconds?: number;
  retry?: { baseSeconds?: number; maxSeconds?: number };
  /** MAIL_SEND_RATE's token bucket (send-rate.ts), shared by every round; unset: no limit. */
  limiter?: SendRateLimiter;
  /** One line per outcome, for the logs: ids and the transport's answer, never a body or a credential. */
  onResult?(result: SendResult): void;
}

export interface SendResult {
  id: number;
  messageId: string;
  kind: string;
  attempt: number;
  outcome: 'sent' | 'retry' | 'failed';
  /** The transport's answer (sent) or the error (retry, failed). */
  detail: string;
}

export interface RoundReport {
  claimed: number;
  sent: number;
  retried: number;
  failed: number;
}

/**
 * The default batch: messages claimed by one statement and recorded sent by one, per slot of
 * `concurrency`. Each statement costs PostgreSQL about 200 µs besides its rows (the claim is planned
 * afresh each time), so 32 a slot rather than 8 took PostgreSQL's CPU a message from ≈60 to ≈40 µs
 * (bench/mail.ts); a batch is still sent within seconds, well inside any lease.
 */
const BATCH_PER_SLOT = 32;

/** One round: claim, render what is new, send, record. `ids`: only these messages (`mail test`). */
export async function drainOnce(options: SenderOptions, ids?: readonly number[]): Promise<RoundReport> {
  const { full: _, ...report } = await drain(options, { ids, batches: 1 });
  return report;
}

/**
 * Claim, render, send and record up to `batches` batches. While the last claim came back full, the
 * next batch is claimed as soon as the queue runs down to one message per worker, so the workers
 * never stand idle between two batches waiting for the database. Each message is rendered by the
 * worker that sends it, just before: a batch's rendered messages are not all held at once. `full`:
 * the last claim came back full (there is probably more to send).
 */
async function drain(
  options: SenderOptions,
  limits: { ids?: readonly number[]; batches: number },
): Promise<RoundReport & { full: boolean }> {
  const batchSize = options.batchSize ?? options.concurrency * BATCH_PER_SLOT;
  const report = { claimed: 0, sent: 0, retried: 0, failed: 0, full: true };
  const queue: ClaimedMail[] = [];
  let batches = 0;
  let failure: unknown;
  let claiming: Promise<void> | undefined;

  const claimBatch = async () => {
    batches++;
    const { claimed, suppressed } = await claimDueMail(options.db, {
      limit: batchSize,
      leaseSeconds: options.leaseSeconds ?? 300,
      maxAttempts: options.maxAttempts,
      ids: limits.ids,
    });
    // Held back by the claim (a suppressed address): counted as claimed and failed, as their rows are.
    report.claimed += claimed.length + suppressed.length;
    report.failed += suppressed.length;
    report.full = claimed.length + suppressed.length >= batchSize;
    for (const m of suppressed) announce(options, m, 'failed', SUPPRESSED_ERROR);
    for (const mail of claimed) queue.push(mail);
  };
  const claimMore = () => {
    if (claiming || failure !== undefined || !report.full || batches >= limits.batches) return;
    if (queue.length > options.concurrency) return;
    claiming = claimBatch()
      .catch((err) => {
        failure ??= err;
      })
      .finally(() => {
        claiming = undefined;
      });
  };

  await claimBatch();
  if (!queue.length) return report;
  const recorder = sentRecorder(options, batchSize);
  const worker = async () => {
    while (failure === undefined) {
      claimMore();
      const next = queue.shift();
      if (next) {
        const outcome = await sendOne(options, recorder, next);
        report[outcome === 'sent' ? 'sent' : outcome === 'retry' ? 'retried' : 'failed']++;
      } else if (claiming) {
        await claiming;
      } else {
        return;
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(options.concurrency, queue.length) }, worker));
  await recorder.done();
  // A failed claim: what was already claimed was sent and recorded; the error fails the round.
  if (failure !== undefined) throw failure;
  return report;
}

interface Accepted {
  /** What the record and its report need (not the bodies, which are garbage once sent). */
  mail: Pick<ClaimedMail, 'id' | 'message_id' | 'kind' | 'attempts'>;
  response: string;
}

/** The longest an accepted message waits to be recorded `sent` (well inside any lease). */
const RECORD_WITHIN_MS = 200;

/**
 * Records accepted messages as `sent` in batches, off the workers' path: a write goes out once a
 * batch's worth (`batchSize`) has been accepted, or RECORD_WITHIN_MS after the first of a smaller
 * lot, so a worker never waits for the database between two sends and a batch costs one statement,
 * not one per message. `done()` writes what is left and waits (the round is over only once
 * everything it sent is recorded), and throws if a write failed; the messages of a failed write
 * stay `sending` and are sent again, the same bytes, once their lease lapses (at-least-once). Each
 * `sent` result is reported once it is recorded.
 */
function sentRecorder(options: SenderOptions, batchSize: number) {
  let queued: Accepted[] = [];
  let writing: Promise<void> | undefined;
  let timer: NodeJS.Timeout | undefined;
  let failure: unknown;
  const write = async (all: boolean) => {
    while (queued.length && (all || queued.length >= batchSize)) {
      const batch = queued;
      queued = [];
      try {
        await markMailSent(
          options.db,
          batch.map((a) => ({ id: a.mail.id, response: a.response })),
        );
      } catch (err) {
        failure ??= err;
        continue;
      }
      for (const a of batch) announce(options, a.mail, 'sent', a.response);
    }
    writing = undefined;
    if (queued.length) timer ??= setTimeout(() => flush(true), RECORD_WITHIN_MS);
  };
  const flush = (all: boolean) => {
    clearTimeout(timer);
    timer = undefined;
    writing ??= write(all);
  };
  return {
    add(accepted: Accepted) {
      queued.push(accepted);
      if (queued.length >= batchSize) flush(false);
      else timer ??= setTimeout(() => flush(true), RECORD_WITHIN_MS);
    },
    async done() {
      while (writing || queued.length) {
        flush(true);
        await writing;
      }
      if (failure) throw failure;
    },
  };
}

function announce(
  options: SenderOptions,
  mail: Pick<ClaimedMail, 'id' | 'message_id' | 'kind' | 'attempts'>,
  outcome: SendResult['outcome'],
  detail: string,
) {
  options.onResult?.({
    id: mail.id,
    messageId: mail.message_id,
    kind: mail.kind,
    attempt: mail.attempts,
    outcome,
    detail,
  });
  return outcome;
}

async function sendOne(
  options: SenderOptions,
  recorder: ReturnType<typeof sentRecorder>,
  mail: ClaimedMail,
): Promise<SendResult['outcome']> {
  let response: string;
  try {
    await options.limiter?.take();
    // Rendering is deterministic (render.ts): every attempt of a message sends the same bytes. A row
    // rendered and stored by an earlier version keeps its stored bytes.
    const raw = mail.raw ?? (await renderMail(mail, options.from));
    response = await options.transport.send({
      raw,
      from: envelopeAddress(mail.from_address ?? options.from),
      to: mail.to_address,
      messageId: mail.message_id,
      queuedAt: mail.created_at,
    });
  } catch (err) {
    const error =
      err instanceof TransportError ? err : new TransportError(`unexpected: ${(err as Error).message}`, false);
    const status = await markMailAttemptFailed(options.db, mail.id, {
      error: error.message,
      permanent: error.permanent,
      retryInSeconds: retryDelaySeconds(mail.attempts, options.retry),
      maxAttempts: options.maxAttempts,
    });
    if (error.hardBounce) {
      await recordSuppression(options.db, {
        address: mail.to_address,
        reason: 'bounce',
        detail: error.message,
        source: error.source ?? 'transport',
      });
    }
    return announce(options, mail, status === 'failed' ? 'failed' : 'retry', error.message);
  }
  recorder.add({
    mail: { id: mail.id, message_id: mail.message_id, kind: mail.kind, attempts: mail.attempts },
    response,
  });
  return 'sent';
}

/** Batches one round of the loop sends back to back before the other outboxes get their turn (512 messages at the default concurrency). */
const BATCHES_PER_ROUND = 4;

export interface MailSender {
  /** Start a round now (after an enqueue, say) instead of at the next poll. */
  wake(): void;
  /** Stop polling and wait for the round in progress. */
  stop(): Promise<void>;
}

/**
 * Rounds until stopped: the next one at once while rounds come back full, else after `pollMs`.
 * A failed round (database down) is reported and retried at the next poll.
 */
export function startMailSender(
  options: SenderOptions & {
    pollMs?: number;
    onError(err: unknown): void;
    /** Other outboxes drained by the same loop after each mail round (back-channel logout tokens). */
    alsoDrain?: () => Promise<unknown>;
  },
): MailSender {
  const pollMs = options.pollMs ?? 1000;
  const batchSize = options.batchSize ?? options.concurrency * BATCH_PER_SLOT;
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<void> | undefined;
  const schedule = (ms: number) => {
    if (stopped) return;
    clearTimeout(timer);
    timer = setTimeout(run, ms);
    timer.unref();
  };
  const run = () => {
    if (running || stopped) return;
    running = drain({ ...options, batchSize }, { batches: BATCHES_PER_ROUND })
      .then(async (report) => {
        await options.alsoDrain?.();
        return report.full;
      })
      .catch((err) => {
        options.onError(err);
        return false;
      })
      .then((full) => {
        running = undefined;
        schedule(full ? 0 : pollMs);
      });
  };
  schedule(0);
  return {
    wake: () => {
      if (!running) schedule(0);
    },
    async stop() {
      stopped = true;
      clearTimeout(timer);
      await running;
      await options.transport.close();
    },
  };
}

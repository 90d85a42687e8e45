// MAIL_SEND_RATE: at most this many messages a second handed to the transport, for a provider that
// enforces a rate (SES: the account's maximum send rate, 1/s in the sandbox, 14/s and up in
// production; exceeding it answers Throttling). A token bucket: `rate` tokens a second, holding at
// most max(1, rate) (a burst of one second's worth), shared by every worker of one sender, and kept
// across rounds so that a new round does not start with a fresh burst. Unset or 0: no limit.

export interface SendRateLimiter {
  /** Resolves when one message may go. */
  take(): Promise<void>;
}

export function createSendRateLimiter(
  rate: number,
  clock: { now(): number; sleep(ms: number): Promise<void> } = {
    now: () => performance.now(),
    sleep: (ms) => new Promise((resolve) => setTimeout(resolve, ms)),
  },
): SendRateLimiter | undefined {
  if (!(rate > 0)) return undefined;
  const capacity = Math.max(1, rate);
  let tokens = capacity;
  let last = clock.now();
  // Callers queue in order: each waits for the one before it, so none is starved.
  let queue: Promise<void> = Promise.resolve();
  const refill = () => {
    const now = clock.now();
    tokens = Math.min(capacity, tokens + ((now - last) / 1000) * rate);
    last = now;
  };
  return {
    take() {
      const turn = queue.then(async () => {
        refill();
        while (tokens < 1) {
          await clock.sleep(Math.ceil(((1 - tokens) / rate) * 1000));
          refill();
        }
        tokens -= 1;
      });
      queue = turn;
      return turn;
    },
  };
}

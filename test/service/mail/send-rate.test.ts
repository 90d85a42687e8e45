// MAIL_SEND_RATE's token bucket on a simulated clock: a burst of one second's worth, then the rate,
// in the order callers asked, and nothing when unset.
import { describe, expect, it } from 'vitest';
import { createSendRateLimiter } from '../../../service/mail/send-rate';

function simulatedClock() {
  let now = 0;
  return {
    now: () => now,
    sleep: async (ms: number) => {
      now += ms;
    },
  };
}

describe('the send-rate token bucket', () => {
  it('0 or unset: no limiter', () => {
    expect(createSendRateLimiter(0)).toBeUndefined();
    expect(createSendRateLimiter(Number.NaN)).toBeUndefined();
  });

  it('14/s: 14 at once, then one every 1/14 s; 40 messages take 26/14 s', async () => {
    const clock = simulatedClock();
    const limiter = createSendRateLimiter(14, clock)!;
    const times: number[] = [];
    await Promise.all(Array.from({ length: 40 }, () => limiter.take().then(() => times.push(clock.now()))));
    expect(times.slice(0, 14)).toEqual(Array(14).fill(0));
    expect(times[14]).toBe(Math.ceil(1000 / 14));
    expect(times.every((t, i) => i === 0 || t >= times[i - 1])).toBe(true);
    expect(times[39]).toBeGreaterThanOrEqual((26 / 14) * 1000);
    expect(times[39]).toBeLessThan((26 / 14) * 1000 + 30);
  });

  it('0.5/s: one, then one every two seconds', async () => {
    const clock = simulatedClock();
    const limiter = createSendRateLimiter(0.5, clock)!;
    const times: number[] = [];
    for (let i = 0; i < 3; i++) {
      await limiter.take();
      times.push(clock.now());
    }
    expect(times).toEqual([0, 2000, 4000]);
  });
});

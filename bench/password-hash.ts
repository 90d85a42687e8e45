// Password hashing (argon2id): the cost of one hash at the production parameters, and how responsive the
// event loop stays while a burst of sign-ins hashes (p50/p99 event-loop delay during the burst vs
// an idle baseline measured in the same run). Run: npx tsx bench/password-hash.ts
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { DEFAULT_PARAMS, hashPassword, verifyPassword } from '../service/domain/passwords';

const ms = (ns: number) => (ns / 1e6).toFixed(2);

async function sampleDelay(durationMs: number, work?: () => Promise<unknown>) {
  const h = monitorEventLoopDelay({ resolution: 1 });
  h.enable();
  const started = Date.now();
  const running = work?.();
  while (Date.now() - started < durationMs) await new Promise((r) => setTimeout(r, 5));
  await running;
  h.disable();
  return { p50: h.percentile(50), p99: h.percentile(99), max: h.max };
}

async function main() {
  console.log(
    `argon2id parameters: m=${DEFAULT_PARAMS.memoryCost} KiB (${(DEFAULT_PARAMS.memoryCost / 1024).toFixed(0)} MiB per hash), t=${DEFAULT_PARAMS.timeCost}, p=${DEFAULT_PARAMS.parallelism}`,
  );
  const phc = await hashPassword('warm-up password');
  const times: number[] = [];
  for (let i = 0; i < 5; i++) {
    const t = performance.now();
    await verifyPassword('correct horse battery staple', phc);
    times.push(performance.now() - t);
  }
  times.sort((a, b) => a - b);
  console.log(
    `one verification: median ${times[2].toFixed(0)} ms (min ${times[0].toFixed(0)}, max ${times[4].toFixed(0)})`,
  );

  const idle = await sampleDelay(1500);
  const burst = 40;
  const t = performance.now();
  let burstMs = 0;
  // The burst's own duration (the delay sampling runs on for its full window regardless).
  const busy = await sampleDelay(1500, () =>
    Promise.all(Array.from({ length: burst }, () => verifyPassword('x', phc))).then(() => {
      burstMs = performance.now() - t;
    }),
  );
  console.log(
    `event-loop delay idle:                 p50 ${ms(idle.p50)} ms, p99 ${ms(idle.p99)} ms, max ${ms(idle.max)} ms`,
  );
  console.log(
    `event-loop delay during ${burst} hashes:     p50 ${ms(busy.p50)} ms, p99 ${ms(busy.p99)} ms, max ${ms(busy.max)} ms`,
  );
  console.log(
    `ratio busy/idle p99: ${(busy.p99 / idle.p99).toFixed(2)}x  (hashing runs on one nice-19 worker thread per core, never on the event loop; ${burst} took ${burstMs.toFixed(0)} ms: ${((burst * 1000) / burstMs).toFixed(1)} verifications/s)`,
  );
  const rss = process.memoryUsage().rss;
  console.log(`RSS after the burst: ${(rss / 2 ** 20).toFixed(0)} MB`);
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});

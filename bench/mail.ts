// The outbox drained into a local SMTP sink (smtp-server on loopback), through the real sender and
// the real SMTP transport (nodemailer, pooled), on real PostgreSQL:
// - drain: N messages queued, then the sender started; messages/s until the last is accepted by the
//   sink and recorded sent;
// - latency: messages queued one by one at a steady rate while the sender runs (its normal 1 s
//   poll shortened to 50 ms here, the figure a loaded instance sees); p50/p99 from the enqueue's
//   commit to the sink's 250;
// - baseline, same run: nodemailer itself (pooled, the same connections) sending the same
//   messages straight to the sink, no database and no code of ours, so the ratio shows what the
//   outbox (claims, stored bytes, status writes) and our transport cost. The target is that ratio,
//   the median of ROUNDS rounds that alternate the two (a neighbour's load falls on both alike).
// Run: npx tsx bench/mail.ts   (TEST_DATABASE_URL to use a server; else embedded PostgreSQL)
import nodemailer from 'nodemailer';
import { migrateToLatest } from '../service/db/migrator';
import { buildMessage } from '../service/domain/mail/message';
import { enqueueMail } from '../service/domain/mail/outbox';
import { renderMail } from '../service/domain/mail/render';
import { startMailSender } from '../service/mail/sender';
import { smtpTransport } from '../service/mail/smtp-transport';
import { startScratchDatabase } from './support/scratch-database';
import { startSmtpSink } from '../test/support/smtp-sink';

const N = Number(process.env.BENCH_MAIL_MESSAGES ?? 2000);
const CONCURRENCY = Number(process.env.BENCH_MAIL_CONCURRENCY ?? 4);
const RATE = Number(process.env.BENCH_MAIL_RATE ?? 100);
const ROUNDS = Number(process.env.BENCH_MAIL_ROUNDS ?? 3);
const LATENCY_SECONDS = Number(process.env.BENCH_MAIL_LATENCY_SECONDS ?? 5);
/** The outbox drain against nodemailer alone, same run, same sink (issue 30). */
const GOAL_RATIO = 0.8;

const percentile = (sorted: number[], p: number) =>
  sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
const settings = { publicUrl: 'https://id.example.org', from: 'Lanyard <noreply@id.example.org>' };
const message = (i: number) =>
  buildMessage(settings, {
    name: `User ${i}`,
    subject: `Reset your password (${i})`,
    paragraphs: ['Someone asked to reset the password of your account.', 'The link works once, for one hour.'],
    action: { label: 'Choose a new password', path: '/users/password/edit', query: { reset_password_token: `t${i}` } },
    closing: ['If you did not ask for this, ignore this e-mail.'],
  });
const idOf = (raw: string) => /^Message-ID: (<[^>]+>)/im.exec(raw)?.[1] ?? '';

async function main() {
  const handle = await startScratchDatabase('mail', CONCURRENCY + 4);
  const sink = await startSmtpSink();
  try {
    const db = handle.db;
    await migrateToLatest(db);

    // Rounds, interleaved so that a neighbour's load falls on both sides alike: nodemailer alone,
    // then the same number of messages queued and drained by the sender; the ratio is the median
    // of the rounds' ratios.
    const sinkUrl = new URL(sink.url());
    const baseRates: number[] = [];
    const drainRates: number[] = [];
    const enqueueRates: number[] = [];
    let errors = 0;
    // Round -1 warms both sides up (JIT, connections), untimed: a cold baseline flattered the ratio.
    for (let round = -1; round < ROUNDS; round++) {
      const n = round < 0 ? Math.min(N, 300) : N;
      // Baseline: nodemailer alone, the same messages rendered beforehand (untimed), CONCURRENCY in flight.
      const base = nodemailer.createTransport({
        host: sinkUrl.hostname,
        port: Number(sinkUrl.port),
        secure: false,
        pool: true,
        maxConnections: CONCURRENCY,
        maxMessages: 1000,
      });
      const raws = await Promise.all(
        Array.from({ length: n }, async (_, i) => {
          const m = message(i);
          return renderMail(
            {
              message_id: `<base-${round}-${i}@id.example.org>`,
              to_address: `user${i}@example.com`,
              from_address: m.from,
              subject: m.subject,
              text_body: m.text,
              html_body: m.html,
              headers: m.headers,
              created_at: new Date(),
            },
            settings.from,
          );
        }),
      );
      let next = 0;
      let started = performance.now();
      await Promise.all(
        Array.from({ length: CONCURRENCY }, async () => {
          while (next < n) {
            const i = next++;
            await base.sendMail({
              envelope: { from: 'noreply@id.example.org', to: [`user${i}@example.com`] },
              raw: raws[i],
            });
          }
        }),
      );
      const baseRate = n / ((performance.now() - started) / 1000);
      base.close();
      sink.received.length = 0;

      // Drain: N queued, then the sender, until every message is accepted by the sink and recorded sent.
      started = performance.now();
      for (let i = 0; i < n; i++) await enqueueMail(db, { ...message(i), to: `user${i}@example.com`, kind: 'bench' });
      const enqueueRate = n / ((performance.now() - started) / 1000);
      let sent = 0;
      started = performance.now();
      const sender = startMailSender({
        db,
        transport: smtpTransport({ url: sink.url(), maxConnections: CONCURRENCY }),
        from: settings.from,
        maxAttempts: 5,
        concurrency: CONCURRENCY,
        pollMs: 50,
        onResult: (r) => {
          if (r.outcome === 'sent') sent++;
          else errors++;
        },
        onError: () => errors++,
      });
      while (sent < n || sink.received.length < n) await new Promise((r) => setTimeout(r, 5));
      const drainRate = n / ((performance.now() - started) / 1000);
      await sender.stop();
      sink.received.length = 0;
      if (round < 0) continue;
      baseRates.push(baseRate);
      enqueueRates.push(enqueueRate);
      drainRates.push(drainRate);
    }
    const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
    const ratios = drainRates.map((d, i) => d / baseRates[i]);
    const baseRate = median(baseRates);
    const drainRate = median(drainRates);
    const enqueueRate = median(enqueueRates);
    const ratio = median(ratios);

    const transport = smtpTransport({ url: sink.url(), maxConnections: CONCURRENCY });
    const sender = startMailSender({
      db,
      transport,
      from: settings.from,
      maxAttempts: 5,
      concurrency: CONCURRENCY,
      pollMs: 50,
      onResult: (r) => {
        if (r.outcome !== 'sent') errors++;
      },
      onError: () => errors++,
    });

    // Latency: a steady RATE/s of single enqueues while the sender runs.
    sink.received.length = 0;
    const queuedAt = new Map<string, number>();
    const total = RATE * LATENCY_SECONDS;
    for (let i = 0; i < total; i++) {
      const { messageId } = await enqueueMail(db, { ...message(N + i), to: `late${i}@example.com`, kind: 'bench' });
      queuedAt.set(messageId, Date.now());
      await new Promise((r) => setTimeout(r, 1000 / RATE));
    }
    while (sink.received.length < total) await new Promise((r) => setTimeout(r, 5));
    await sender.stop();
    const latencies = sink.received
      .map((m) => m.acceptedAt - (queuedAt.get(idOf(m.raw)) ?? Number.NaN))
      .sort((a, b) => a - b);
    if (latencies.some(Number.isNaN)) throw new Error('a message arrived that was not queued in this run');

    console.log(
      `${handle.kind} PostgreSQL, local smtp-server sink, ${N} messages, ${CONCURRENCY} in flight, ${ROUNDS} interleaved rounds, medians (Node ${process.version})`,
    );
    console.log(`enqueue (one transaction each)      ${enqueueRate.toFixed(0).padStart(6)}/s`);
    console.log(`baseline: nodemailer alone         ${baseRate.toFixed(0).padStart(6)}/s`);
    console.log(
      `outbox drain                       ${drainRate.toFixed(0).padStart(6)}/s   (per round: x${ratios.map((r) => r.toFixed(2)).join(', x')} of the baseline)`,
    );
    console.log(
      `enqueue-to-accepted at ${RATE}/s, poll 50 ms: p50 ${percentile(latencies, 50).toFixed(0)} ms, p99 ${percentile(latencies, 99).toFixed(0)} ms (${latencies.length} messages)`,
    );
    if (errors) console.log(`errors: ${errors}`);
    console.log(
      `target: mail drain x${ratio.toFixed(2)} of nodemailer alone (${drainRate.toFixed(0)}/s vs ${baseRate.toFixed(0)}/s) (goal ≥ x${GOAL_RATIO}) ${ratio >= GOAL_RATIO ? 'met' : 'missed'}`,
    );
  } finally {
    await sink.close();
    await handle.close();
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});

// The outbox drained into a local SMTP sink (smtp-server on loopback, in this process), through the
// real sender and the real SMTP transport (nodemailer, pooled), on real PostgreSQL, against a
// baseline measured in the same run:
// - baseline: nodemailer itself, pooled, CONCURRENCY messages in flight over CONCURRENCY
//   connections, sending the same messages straight to the same sink, rendered beforehand
//   (untimed), with no database and no code of ours;
// - drain: the same number of messages queued (untimed), then the sender started with the same
//   CONCURRENCY; timed until the last message is accepted by the sink and recorded sent. What the
//   ratio shows is what the outbox costs: claims, rendering, status writes, our transport.
// Rounds: one untimed warm-up of both sides (JIT, connections, PostgreSQL's caches), then ROUNDS
// measured rounds. A round prepares both sides first (renders the baseline's messages, queues the
// drain's), then runs the two back to back, their order swapped every round, so that a neighbour's
// load falls on both alike; the target is the median of the rounds' ratios. After each round the
// outbox is vacuumed, untimed, so that autovacuum never lands inside a later measurement (of either
// side); its CPU is counted in the drain's PostgreSQL figure.
// CPU per message, beside each rate: this process (the sink, nodemailer, and for the drain the
// sender and node-postgres) from process.cpuUsage(), and PostgreSQL's processes from /proc (embedded
// PostgreSQL only). CPU per message moves far less with the neighbours than messages per second.
// - latency: messages queued one by one at a steady RATE/s while the sender runs (its normal 1 s
//   poll shortened to 50 ms here, the figure a loaded instance sees); p50/p99 from the enqueue's
//   commit to the sink's 250.
// Run: npx tsx bench/mail.ts   (TEST_DATABASE_URL to use a server; else embedded PostgreSQL)
import { sql } from 'kysely';
import nodemailer from 'nodemailer';
import { migrateToLatest } from '../service/db/migrator';
import type { Db } from '../service/db/schema';
import { buildMessage } from '../service/domain/mail/message';
import { enqueueMail } from '../service/domain/mail/outbox';
import { renderMail } from '../service/domain/mail/render';
import { startMailSender } from '../service/mail/sender';
import { smtpTransport } from '../service/mail/smtp-transport';
import { type SmtpSink, startSmtpSink } from '../test/support/smtp-sink';
import { type PostgresCpu, postgresCpu } from './support/postgres-cpu';
import { startScratchDatabase } from './support/scratch-database';

const N = Number(process.env.BENCH_MAIL_MESSAGES ?? 2000);
const CONCURRENCY = Number(process.env.BENCH_MAIL_CONCURRENCY ?? 4);
const RATE = Number(process.env.BENCH_MAIL_RATE ?? 100);
const ROUNDS = Number(process.env.BENCH_MAIL_ROUNDS ?? 7);
const LATENCY_SECONDS = Number(process.env.BENCH_MAIL_LATENCY_SECONDS ?? 5);
/** The outbox drain against nodemailer alone, same run, same sink (issue 30). */
const GOAL_RATIO = 0.8;

const percentile = (sorted: number[], p: number) =>
  sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};
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

interface Side {
  rate: number;
  /** This process's CPU per message, µs. */
  nodeUs: number;
  /** PostgreSQL's CPU per message, µs (NaN when it cannot be read). */
  pgUs: number;
}

/** Run `body` (which handles n messages), timing it and metering both CPUs. */
async function measure(n: number, pg: PostgresCpu | undefined, body: () => Promise<void>): Promise<Side> {
  const pgUsed = pg?.start();
  const cpu0 = process.cpuUsage();
  const started = performance.now();
  await body();
  const seconds = (performance.now() - started) / 1000;
  const cpu = process.cpuUsage(cpu0);
  const pgMs = pgUsed?.() ?? Number.NaN;
  return { rate: n / seconds, nodeUs: (cpu.user + cpu.system) / n, pgUs: (pgMs * 1000) / n };
}

/** The baseline's messages, rendered as the sender renders them (untimed). */
function renderBaseline(round: number, n: number): Promise<string[]> {
  return Promise.all(
    Array.from({ length: n }, (_, i) => {
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
}

/** nodemailer alone: `raws.length` messages, rendered beforehand, CONCURRENCY in flight. */
async function baseline(sink: SmtpSink, raws: string[], pg: PostgresCpu | undefined): Promise<Side> {
  const n = raws.length;
  const sinkUrl = new URL(sink.url());
  const transport = nodemailer.createTransport({
    host: sinkUrl.hostname,
    port: Number(sinkUrl.port),
    secure: false,
    pool: true,
    maxConnections: CONCURRENCY,
    maxMessages: 1000,
  });
  let next = 0;
  const side = await measure(n, pg, async () => {
    await Promise.all(
      Array.from({ length: CONCURRENCY }, async () => {
        while (next < n) {
          const i = next++;
          await transport.sendMail({
            envelope: { from: 'noreply@id.example.org', to: [`user${i}@example.com`] },
            raw: raws[i],
          });
        }
      }),
    );
  });
  transport.close();
  if (sink.received.length !== n) throw new Error(`baseline: the sink got ${sink.received.length} of ${n}`);
  sink.received.length = 0;
  return side;
}

/** `n` messages queued, one transaction each (timed apart from the drain): messages a second. */
async function queue(db: Db, n: number): Promise<number> {
  const queuedAt = performance.now();
  for (let i = 0; i < n; i++) await enqueueMail(db, { ...message(i), to: `user${i}@example.com`, kind: 'bench' });
  return n / ((performance.now() - queuedAt) / 1000);
}

/** The outbox's `n` queued messages drained by the sender, until all are recorded sent. */
async function drain(db: Db, sink: SmtpSink, n: number, pg: PostgresCpu | undefined): Promise<Side> {
  let problems = 0;
  let sender: ReturnType<typeof startMailSender> | undefined;
  const side = await measure(n, pg, async () => {
    let sent = 0;
    await new Promise<void>((resolve) => {
      sender = startMailSender({
        db,
        transport: smtpTransport({ url: sink.url(), maxConnections: CONCURRENCY }),
        from: settings.from,
        maxAttempts: 5,
        concurrency: CONCURRENCY,
        pollMs: 50,
        onResult: (r) => {
          if (r.outcome !== 'sent') problems++;
          else if (++sent === n) resolve();
        },
        onError: () => problems++,
      });
    });
  });
  await sender?.stop();
  if (problems || sink.received.length !== n) {
    throw new Error(`drain: ${problems} failures, the sink got ${sink.received.length} of ${n}`);
  }
  sink.received.length = 0;
  return side;
}

/** Dead row versions cleaned now, untimed, so that autovacuum does not land in a later round: PostgreSQL's CPU a message. */
async function vacuum(db: Db, n: number, pg: PostgresCpu | undefined): Promise<number> {
  const side = await measure(n, pg, async () => {
    await sql`vacuum mail_outbox`.execute(db);
  });
  return side.pgUs;
}

async function main() {
  const handle = await startScratchDatabase('mail', CONCURRENCY + 4);
  const sink = await startSmtpSink();
  try {
    const db = handle.db;
    await migrateToLatest(db);
    // Only a server this process started is ours to meter (an external one may serve others).
    const pg = handle.kind === 'embedded' ? await postgresCpu(db) : undefined;

    const bases: Side[] = [];
    const drains: Side[] = [];
    const enqueueRates: number[] = [];
    const vacuums: number[] = [];
    // Round -1 warms both sides up, untimed: a cold side would colour the ratio either way.
    for (let round = -1; round < ROUNDS; round++) {
      const n = round < 0 ? Math.ceil(N / 2) : N;
      // Both sides' preparations first (untimed), then the two sides back to back.
      const raws = await renderBaseline(round, n);
      const enqueueRate = await queue(db, n);
      const baseFirst = round % 2 === 0;
      let base: Side | undefined;
      if (baseFirst) base = await baseline(sink, raws, pg);
      const d = await drain(db, sink, n, pg);
      if (!baseFirst) base = await baseline(sink, raws, pg);
      const vacuumUs = await vacuum(db, n, pg);
      if (round < 0) continue;
      bases.push(base!);
      drains.push(d);
      enqueueRates.push(enqueueRate);
      vacuums.push(vacuumUs);
    }
    const ratios = drains.map((d, i) => d.rate / bases[i].rate);
    const ratio = median(ratios);
    const m = (sides: Side[], key: keyof Side) => median(sides.map((s) => s[key]));
    const baseRate = m(bases, 'rate');
    const drainRate = m(drains, 'rate');
    const us = (x: number) => (Number.isNaN(x) ? 'n/a' : `${x.toFixed(0)} µs`);

    // Latency: a steady RATE/s of single enqueues while the sender runs.
    let errors = 0;
    const sender = startMailSender({
      db,
      transport: smtpTransport({ url: sink.url(), maxConnections: CONCURRENCY }),
      from: settings.from,
      maxAttempts: 5,
      concurrency: CONCURRENCY,
      pollMs: 50,
      onResult: (r) => {
        if (r.outcome !== 'sent') errors++;
      },
      onError: () => errors++,
    });
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
      .map((r) => r.acceptedAt - (queuedAt.get(idOf(r.raw)) ?? Number.NaN))
      .sort((a, b) => a - b);
    if (latencies.some(Number.isNaN)) throw new Error('a message arrived that was not queued in this run');

    console.log(
      `${handle.kind} PostgreSQL, local smtp-server sink, ${N} messages a side, ${CONCURRENCY} in flight on both sides, ` +
        `${ROUNDS} rounds alternating the sides after a warm-up, medians (Node ${process.version})`,
    );
    console.log(`enqueue (one transaction each)      ${median(enqueueRates).toFixed(0).padStart(6)}/s`);
    console.log(
      `baseline: nodemailer alone         ${baseRate.toFixed(0).padStart(6)}/s   CPU/message: this process ${us(m(bases, 'nodeUs'))}, PostgreSQL ${us(m(bases, 'pgUs'))}`,
    );
    console.log(
      `outbox drain                       ${drainRate.toFixed(0).padStart(6)}/s   CPU/message: this process ${us(m(drains, 'nodeUs'))}, ` +
        `PostgreSQL ${us(m(drains, 'pgUs'))} + vacuum ${us(median(vacuums))}`,
    );
    console.log(`per round: x${ratios.map((r) => r.toFixed(2)).join(', x')} of the baseline`);
    if (latencies.length) {
      console.log(
        `enqueue-to-accepted at ${RATE}/s, poll 50 ms: p50 ${percentile(latencies, 50).toFixed(0)} ms, p99 ${percentile(latencies, 99).toFixed(0)} ms (${latencies.length} messages)`,
      );
    }
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

// The purge on a timer for `npm start` (the deployed stack uses an EventBridge schedule instead):
// pruneExpiredData once at start and then every interval. The timer never keeps the process alive
// (unref), a run never overlaps the previous one, and stop() waits for a run in progress so the
// database is not closed under it.
import type { Db } from './db/schema';
import { type PruneReport, pruneExpiredData } from './domain/retention';

export interface RetentionTimerOptions {
  db: Db;
  intervalSeconds: number;
  auditRetentionDays?: number;
  mailRetentionDays?: number;
  /** After each run: what was deleted. */
  onPruned(report: PruneReport, ms: number): void;
  /** A run failed (database down): the next tick tries again. */
  onError(err: unknown): void;
}

export interface RetentionTimer {
  stop(): Promise<void>;
}

export function startRetentionTimer(options: RetentionTimerOptions): RetentionTimer {
  if (options.intervalSeconds <= 0) return { stop: async () => undefined };
  let running: Promise<void> | undefined;
  let stopped = false;
  const run = () => {
    if (running || stopped) return;
    const started = Date.now();
    running = pruneExpiredData(options.db, {
      auditRetentionDays: options.auditRetentionDays,
      mailRetentionDays: options.mailRetentionDays,
      actor: 'system:retention-timer',
    })
      .then((report) => options.onPruned(report, Date.now() - started))
      .catch((err) => options.onError(err))
      .finally(() => {
        running = undefined;
      });
  };
  const first = setTimeout(run, 0);
  const timer = setInterval(run, options.intervalSeconds * 1000);
  first.unref();
  timer.unref();
  return {
    async stop() {
      stopped = true;
      clearTimeout(first);
      clearInterval(timer);
      await running;
    },
  };
}

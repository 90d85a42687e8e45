// An expiry date in words ("in 10 days", "expired 2 days ago"), with the date itself in the
// markup, and the "expires soon" highlight (7 days or fewer). Dates are UTC calendar days: a token
// dated today works through the end of today.
import * as React from './jsx';
import type { Html } from './jsx';

/** Expiring within this many days is highlighted. */
export const EXPIRING_SOON_DAYS = 7;

const DAY_MS = 86_400_000;
const dayNumber = (d: Date) => Math.floor(d.getTime() / DAY_MS);

/** Whole days from today (UTC) to `date` (YYYY-MM-DD): 0 today, negative in the past. */
export const daysUntil = (date: string, now = new Date()): number =>
  dayNumber(new Date(`${date}T00:00:00Z`)) - dayNumber(now);

/** The expiry in words: "today", "tomorrow", "in 10 days", "expired yesterday", "expired 2 days ago". */
export function expiryInWords(date: string, now = new Date()): string {
  const days = daysUntil(date, now);
  if (days === 0) return 'today';
  if (days === 1) return 'tomorrow';
  if (days > 1) return `in ${days} days`;
  if (days === -1) return 'expired yesterday';
  return `expired ${-days} days ago`;
}

/** An expiry (YYYY-MM-DD, or none) as the lists show it. */
export function Expiry({ date, now = new Date() }: { date: string | null; now?: Date }): Html {
  if (date === null) return <span>Never</span>;
  const days = daysUntil(date, now);
  const soon = days >= 0 && days <= EXPIRING_SOON_DAYS;
  return (
    <span class={soon ? 'expiry expiring-soon' : 'expiry'}>
      <time datetime={date} title={date}>
        {expiryInWords(date, now)}
      </time>
      <span class="muted"> ({date})</span>
      {soon ? <span class="badge badge-warning">Expires soon</span> : null}
    </span>
  );
}

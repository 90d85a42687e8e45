// The one error page a browser sees, in the layout: what happened in words first, then what to do
// and a way back (a link, never a dead end); a technical code, when there is one, comes second.
// Used by the root error and not-found handlers (404, 405, 400, 429, 500, 503), the form refusals
// (CSRF, another site's form, a repeated field) and the authorization endpoint's errors.
import type { FastifyReply, FastifyRequest } from 'fastify';
import { ownOrigins } from '../http/origin';
import { safeReturnTo } from './current-user';
import * as React from './jsx';
import type { Child } from './jsx';
import { Layout, sendPage } from './layout';

export interface BackLink {
  href: string;
  label: string;
}

export interface ErrorPageProps {
  status: number;
  title: string;
  /** What happened and what to do, in words. */
  message: Child;
  /** A technical code (an OAuth error) and its description, shown after the words. */
  code?: { error: string; description: string };
  /** Where to go from here; default: the start page. */
  back?: BackLink;
}

export const HOME_LINK: BackLink = { href: '/', label: 'Go to the start page' };

/**
 * Where "Go back" leads after a refused form: the page the form was on (the Referer's path when it
 * is this site's), else the start page. Never another site (safeReturnTo).
 */
export function backToReferer(request: FastifyRequest): BackLink {
  const referer = request.headers.referer;
  if (typeof referer !== 'string') return HOME_LINK;
  try {
    const url = new URL(referer);
    const path = ownOrigins(request).includes(url.origin) ? safeReturnTo(url.pathname + url.search) : undefined;
    return path ? { href: path, label: 'Go back to the form' } : HOME_LINK;
  } catch {
    return HOME_LINK;
  }
}

export function sendErrorPage(reply: FastifyReply, props: ErrorPageProps) {
  const back = props.back ?? HOME_LINK;
  return sendPage(
    reply,
    props.status,
    <Layout title={props.title} variant="card">
      <p id="error-message">{props.message}</p>
      {props.code ? (
        <div class="error-code">
          <p>
            Error code: <strong id="error-code">{props.code.error}</strong>
          </p>
          <p id="error-description">{props.code.description}</p>
        </div>
      ) : null}
      <p class="actions">
        <a class="button primary" id="error-back" href={back.href}>
          {back.label}
        </a>
      </p>
    </Layout>,
  );
}

/** "30 seconds", "1 minute", "5 minutes", "2 hours": how long until a limit lifts. */
export function durationWords(seconds: number): string {
  const s = Math.max(1, Math.ceil(seconds));
  const unit = (n: number, word: string) => `${n} ${word}${n === 1 ? '' : 's'}`;
  if (s < 60) return unit(s, 'second');
  if (s < 3600) return unit(Math.ceil(s / 60), 'minute');
  return unit(Math.ceil(s / 3600), 'hour');
}

/** 429 with the time left (and the Retry-After header) and a way back. */
export function sendTooManyRequests(
  reply: FastifyReply,
  retryAfterSeconds: number,
  what = 'Too many attempts',
  back?: BackLink,
) {
  reply.header('retry-after', String(Math.max(1, Math.ceil(retryAfterSeconds))));
  return sendErrorPage(reply, {
    status: 429,
    title: 'Too many requests',
    message: `${what}. For your security, try again in ${durationWords(retryAfterSeconds)}.`,
    back,
  });
}

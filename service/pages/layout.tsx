// The page shell every server-rendered page shares (header with the product and the signed-in
// user, account navigation, main landmark, flash region, error summary), and the headers and
// redirects every page answer sends.
import type { FastifyReply } from 'fastify';
import { ConfirmForm, ErrorSummary, type FieldError, type Flash, FlashMessages } from './components';
import * as React from './jsx';
import type { Child, Html } from './jsx';
import { SCRIPT_PATH } from './script';
import { STYLESHEET_PATH } from './stylesheet';

export const PRODUCT_NAME = 'Lanyard';

/** The account pages, in navigation order (GitLab's paths). */
export const ACCOUNT_NAV = [
  { href: '/-/profile', label: 'Overview' },
  { href: '/profile/applications', label: 'Applications' },
  { href: '/-/user_settings/authorized_applications', label: 'Authorized applications' },
  { href: '/-/user_settings/personal_access_tokens', label: 'Access tokens' },
  { href: '/-/profile/two_factor_auth', label: 'Two-factor authentication' },
  { href: '/-/user_settings/password/edit', label: 'Password' },
  { href: '/-/user_settings/active_sessions', label: 'Active sessions' },
  { href: '/-/profile/emails', label: 'Emails' },
  { href: '/-/profile/notifications', label: 'Notifications' },
] as const;
export type AccountSection = (typeof ACCOUNT_NAV)[number]['href'];

export interface PageUser {
  username: string;
  name: string;
}

export interface LayoutProps {
  title: string;
  /** The signed-in user, shown in the header with a sign-out button (needs `csrf`). */
  user?: PageUser;
  csrf?: string;
  /** The account section this page belongs to: shows the account navigation. */
  section?: AccountSection;
  /** `card`: a narrow centred box (sign-in, consent, errors). */
  variant?: 'card' | 'single';
  flash?: Flash;
  errors?: readonly FieldError[];
  /** A line under the title. */
  lead?: Child;
  /** Same-origin scripts (CSP `script-src 'self'`), deferred. */
  scripts?: readonly string[];
  children?: Child;
}

export function Layout(props: LayoutProps): Html {
  const shell = props.section ? 'shell' : `shell ${props.variant ?? 'single'}`;
  return (
    <html lang="en">
      <head>
        <meta charset="utf-8" />
        <meta name="viewport" content="width=device-width, initial-scale=1" />
        <meta name="color-scheme" content="light dark" />
        <title>{`${props.title} · ${PRODUCT_NAME}`}</title>
        <link rel="icon" href="/favicon.svg" type="image/svg+xml" />
        <link rel="stylesheet" href={STYLESHEET_PATH} />
        {(props.scripts ?? []).map((src) => (
          <script src={src} defer />
        ))}
        <script src={SCRIPT_PATH} defer></script>
      </head>
      <body>
        <a class="skip-link" href="#main">
          Skip to main content
        </a>
        <header class="topbar">
          <a class="brand" href="/">
            {PRODUCT_NAME}
          </a>
          {props.user ? (
            <div class="user-menu">
              <span>
                Signed in as <strong id="signed-in-user">{props.user.username}</strong>
              </span>
              {props.csrf ? (
                <form method="post" action="/users/sign_out">
                  <input type="hidden" name="authenticity_token" value={props.csrf} />
                  <button type="submit">Sign out</button>
                </form>
              ) : (
                <a href="/users/sign_out">Sign out</a>
              )}
            </div>
          ) : null}
        </header>
        <div class={shell}>
          {props.section ? (
            <nav class="side-nav" aria-label="User settings">
              <h2>User settings</h2>
              <ul>
                {ACCOUNT_NAV.map((item) => (
                  <li>
                    <a href={item.href} aria-current={item.href === props.section ? 'page' : undefined}>
                      {item.label}
                    </a>
                  </li>
                ))}
              </ul>
            </nav>
          ) : null}
          <main id="main">
            <h1>{props.title}</h1>
            {props.lead ? <p class="lead">{props.lead}</p> : null}
            <FlashMessages flash={props.flash} />
            <ErrorSummary errors={props.errors} />
            {props.children}
          </main>
        </div>
        <div id="live-status" class="visually-hidden" aria-live="polite"></div>
      </body>
    </html>
  );
}

/**
 * Security headers of every page: no framing (clickjacking of the consent button), scripts and
 * styles only from our own origin (the one script, pages/script.ts; no inline code), nothing cached
 * (pages carry CSRF tokens and, once, secrets).
 */
export const PAGE_HEADERS = {
  'content-type': 'text/html; charset=utf-8',
  'content-security-policy':
    "default-src 'none'; script-src 'self'; connect-src 'self'; style-src 'self'; img-src 'self'; base-uri 'none'; frame-ancestors 'none'",
  'x-frame-options': 'DENY',
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'same-origin',
  'cache-control': 'no-store',
} as const;

/**
 * The confirm page in front of a destructive account action: the question, the danger button that
 * posts to `action` (with the CSRF token), and Cancel back to the section's page.
 */
export function ConfirmPage(props: {
  title: string;
  user: PageUser;
  csrf: string;
  section: AccountSection;
  action: string;
  confirmLabel: string;
  children?: Child;
}): Html {
  return (
    <Layout title={props.title} user={props.user} csrf={props.csrf} section={props.section}>
      <ConfirmForm action={props.action} csrf={props.csrf} confirmLabel={props.confirmLabel} cancelHref={props.section}>
        {props.children}
      </ConfirmForm>
    </Layout>
  );
}

export function sendPage(reply: FastifyReply, status: number, page: Html) {
  return reply.code(status).headers(PAGE_HEADERS).send(React.renderDocument(page));
}

/** A 302 that is never cached (Location may carry a code). */
export function redirect(reply: FastifyReply, location: string) {
  return reply.code(302).header('cache-control', 'no-store').header('location', location).send();
}

/** The answer to a successful form post (post/redirect/get: a reload repeats only the GET). */
export function seeOther(reply: FastifyReply, location: string) {
  return reply.code(303).header('cache-control', 'no-store').header('location', location).send();
}

// The JSON and human views shared by several commands, built from the domain's summaries so the
// CLI, the admin Lambda and the web pages describe a user/application/token the same way.
import type { User, DbOrTrx } from '../service/db/schema';
import { applicationSummary, type ApplicationRecord } from '../service/domain/applications';
import type { personalAccessTokenSummary } from '../service/domain/personal-access-tokens';
import type { MailSummary } from '../service/domain/mail/operations';
import type { LogoutDelivery } from '../service/domain/backchannel-logout';
import type { ActiveSession } from '../service/domain/sessions';
import { parseUserAgent } from '../service/domain/user-agent';
import { listUserEmails, userSummary } from '../service/domain/users';
import { UserError } from './errors';
import { recordOf, table, type Result } from './output';

// ---- users
export type UserView = ReturnType<typeof userSummary>;

export async function userView(db: DbOrTrx, user: User): Promise<UserView> {
  return userSummary(user, await listUserEmails(db, user.id));
}

export const userResult = (view: UserView, heading?: string): Result => ({
  json: view,
  text: (heading ? `${heading}\n` : '') + recordOf(view),
});

export const userTable = (views: UserView[]): string =>
  table(views, [
    { header: 'ID', value: (u) => u.id },
    { header: 'USERNAME', value: (u) => u.username },
    { header: 'NAME', value: (u) => u.name },
    { header: 'EMAIL', value: (u) => u.email },
    { header: 'STATE', value: (u) => u.state },
    { header: 'ADMIN', value: (u) => u.is_admin },
    { header: '2FA', value: (u) => u.two_factor_enabled },
  ]);

// ---- applications
export type ApplicationView = ReturnType<typeof applicationSummary>;

export const applicationView = (app: ApplicationRecord): ApplicationView => applicationSummary(app);

export const applicationResult = (app: ApplicationRecord, heading?: string): Result => {
  const view = applicationView(app);
  return { json: view, text: (heading ? `${heading}\n` : '') + recordOf(applicationFields(view)) };
};

/** The human record: redirect URIs one per line, instead of the GitLab-style callback_url. */
export function applicationFields(view: ApplicationView): Record<string, unknown> {
  const { callback_url: _callback, redirect_uris, post_logout_redirect_uris, ...rest } = view;
  return {
    ...rest,
    redirect_uris: redirect_uris.join('\n'),
    post_logout_redirect_uris: post_logout_redirect_uris.join('\n'),
  };
}

export const applicationTable = (views: ApplicationView[]): string =>
  table(views, [
    { header: 'ID', value: (a) => a.id },
    { header: 'NAME', value: (a) => a.application_name },
    // 64 characters: cut to fit; `apps show ID` takes the short id as well.
    { header: 'APP ID', value: (a) => a.application_id, overflow: 'truncate' },
    { header: 'TYPE', value: applicationType },
    { header: 'SCOPES', value: (a) => a.scopes },
    { header: 'REDIRECT URIS', value: (a) => a.redirect_uris },
  ]);

/** "confidential" or "public", "trusted" (skips consent) when it is, "dynamic" when it registered itself. */
const applicationType = (a: ApplicationView): string =>
  `${a.confidential ? 'confidential' : 'public'}${a.trusted ? ' trusted' : ''}${a.dynamically_registered ? ' dynamic' : ''}`;

// ---- personal access tokens
export type TokenView = ReturnType<typeof personalAccessTokenSummary>;

export const tokenState = (t: TokenView): string => (t.revoked ? 'revoked' : t.active ? 'active' : 'expired');

export const tokenTable = (views: TokenView[]): string =>
  table(views, [
    { header: 'ID', value: (t) => t.id },
    { header: 'USER', value: (t) => t.user },
    { header: 'NAME', value: (t) => t.name },
    { header: 'SCOPES', value: (t) => t.scopes },
    { header: 'EXPIRES', value: (t) => t.expires_at ?? 'never' },
    { header: 'STATE', value: tokenState },
    { header: 'LAST USED', value: (t) => t.last_used_at },
  ]);

/** Shown under every secret: it is not stored and cannot be shown again. */
export const SHOWN_ONCE = 'Store it now: it is shown only once and cannot be recovered.';

/** A message id given on the command line (a string: yargs would turn "abc" into NaN). */
export function mailId(value: unknown): number {
  const id = String(value);
  if (!/^[1-9]\d{0,15}$/.test(id))
    throw new UserError(`mail id "${id}" is not a number (see \`lanyard-admin mail list\`)`);
  return Number(id);
}

export type MailView = {
  id: number;
  message_id: string;
  kind: string;
  to: string;
  subject: string;
  status: string;
  attempts: number;
  created_at: string;
  sent_at: string | null;
  next_attempt_at: string | null;
  last_error: string | null;
  transport_response: string | null;
};

export const mailView = (m: MailSummary): MailView => ({
  id: m.id,
  message_id: m.message_id,
  kind: m.kind,
  to: m.to_address,
  subject: m.subject,
  status: m.status,
  attempts: m.attempts,
  created_at: m.created_at.toISOString(),
  sent_at: m.sent_at?.toISOString() ?? null,
  // When the next attempt is due: only meaningful while pending.
  next_attempt_at: m.status === 'pending' ? m.next_attempt_at.toISOString() : null,
  last_error: m.last_error,
  transport_response: m.transport_response,
});

/** `text` cut to `max` characters, the cut marked with "…". */
export const cut = (text: string, max: number): string =>
  [...text].length > max ? `${[...text].slice(0, max - 1).join('')}…` : text;

/** At most 80 columns: long kinds and addresses are cut, the subject gets the rest (the JSON has them whole). */
export function mailTable(views: MailView[]): string {
  const kind = (m: MailView) => cut(m.kind, 14);
  const to = (m: MailView) => cut(m.to, 22);
  const widest = (header: string, values: string[]) => Math.max(header.length, ...values.map((v) => [...v].length));
  const used =
    widest(
      'ID',
      views.map((m) => String(m.id)),
    ) +
    widest(
      'STATUS',
      views.map((m) => m.status),
    ) +
    widest(
      'TRIES',
      views.map((m) => String(m.attempts)),
    ) +
    widest('KIND', views.map(kind)) +
    widest('TO', views.map(to)) +
    5 * 2;
  return table(views, [
    { header: 'ID', value: (m) => m.id },
    { header: 'STATUS', value: (m) => m.status },
    { header: 'TRIES', value: (m) => m.attempts },
    { header: 'KIND', value: kind },
    { header: 'TO', value: to },
    { header: 'SUBJECT', value: (m) => cut(m.subject, Math.max(10, 80 - used)) },
  ]);
}

// ---- web sessions
export const sessionView = (s: ActiveSession) => {
  const { browser, os } = parseUserAgent(s.user_agent);
  return {
    id: s.id,
    browser,
    os,
    ip_address: s.ip_address,
    user_agent: s.user_agent,
    created_at: s.created_at.toISOString(),
    last_seen_at: s.last_seen_at.toISOString(),
    expires_at: s.expires_at.toISOString(),
  };
};
type SessionView = ReturnType<typeof sessionView>;

/** Minutes are enough in a table (the JSON has the milliseconds). */
const minute = (iso: string) => `${iso.slice(0, 16).replace('T', ' ')}Z`;

export const sessionTable = (views: SessionView[]): string =>
  table(views, [
    { header: 'ID', value: (s) => s.id },
    { header: 'BROWSER', value: (s) => `${s.browser}, ${s.os}` },
    { header: 'ADDRESS', value: (s) => s.ip_address ?? '' },
    { header: 'LAST SEEN', value: (s) => minute(s.last_seen_at) },
  ]);

// ---- back-channel logout deliveries
export const logoutDeliveryView = (d: LogoutDelivery) => ({
  id: d.id,
  application: d.application_name,
  client_id: d.client_id,
  uri: d.uri,
  sub: d.sub,
  sid: d.sid,
  reason: d.reason,
  status: d.status,
  attempts: d.attempts,
  next_attempt_at: d.status === 'pending' ? d.next_attempt_at.toISOString() : null,
  last_error: d.last_error,
  response_status: d.response_status,
  created_at: d.created_at.toISOString(),
  sent_at: d.sent_at?.toISOString() ?? null,
});
type LogoutDeliveryView = ReturnType<typeof logoutDeliveryView>;

export const logoutDeliveryTable = (views: LogoutDeliveryView[]): string =>
  table(views, [
    { header: 'ID', value: (d) => d.id },
    { header: 'STATUS', value: (d) => d.status },
    { header: 'TRIES', value: (d) => d.attempts },
    { header: 'APPLICATION', value: (d) => d.application },
    { header: 'REASON', value: (d) => d.reason },
    { header: 'LAST ERROR', value: (d) => d.last_error ?? '' },
  ]);

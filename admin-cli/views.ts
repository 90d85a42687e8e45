// The JSON and human views shared by several commands, built from the domain's summaries so the
// CLI, the admin Lambda and the web pages describe a user/application/token the same way.
import type { User, DbOrTrx } from '../service/db/schema';
import { applicationSummary, type ApplicationRecord } from '../service/domain/applications';
import type { personalAccessTokenSummary } from '../service/domain/personal-access-tokens';
import { listUserEmails, userSummary } from '../service/domain/users';
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
  const { callback_url: _callback, redirect_uris, ...rest } = view;
  return { ...rest, redirect_uris: redirect_uris.join('\n') };
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

/** "confidential" or "public", and "trusted" (skips consent) when it is. */
const applicationType = (a: ApplicationView): string =>
  `${a.confidential ? 'confidential' : 'public'}${a.trusted ? ' trusted' : ''}`;

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

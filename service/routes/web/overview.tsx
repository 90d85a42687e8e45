// /-/profile: the account overview, where signing in lands when nothing else asked for a page —
// who you are to the applications you sign in to (name, username, e-mail addresses), whether
// two-factor authentication protects the account (and a warning when no recovery code is left),
// and the way to every other account page.
import type { FastifyInstance } from 'fastify';
import type { AppContext } from '../../app-context';
import { countSecondaryEmails } from '../../domain/emails';
import { remainingRecoveryCodes } from '../../domain/two-factor';
import { twoFactorEnabled } from '../../domain/users';
import { LinkButton } from '../../pages/components';
import { DEFAULT_AFTER_SIGN_IN } from '../../pages/current-user';
import * as React from '../../pages/jsx';
import { Layout, sendPage } from '../../pages/layout';
import { accountGuardFor, pendingFlash } from './account';
import { TWO_FACTOR_PATH } from './two-factor';

const OVERVIEW_PATH = DEFAULT_AFTER_SIGN_IN;

/** The other account pages, each with what it is for. */
const PLACES = [
  { href: '/-/user_settings/active_sessions', label: 'Active sessions', hint: 'Where you are signed in' },
  { href: '/profile/applications', label: 'Applications', hint: 'OAuth applications you registered' },
  {
    href: '/profile/applications#authorized-applications',
    label: 'Authorized applications',
    hint: 'Applications that can use your account',
  },
  { href: '/-/user_settings/personal_access_tokens', label: 'Access tokens', hint: 'Tokens for scripts and tools' },
  { href: '/-/profile/notifications', label: 'Notifications', hint: 'What you are e-mailed about' },
  { href: '/-/profile/emails', label: 'Emails', hint: 'Your addresses and which is primary' },
  { href: '/-/user_settings/password/edit', label: 'Password', hint: 'Change your password' },
] as const;

export async function overviewRoutes(app: FastifyInstance, { db }: AppContext) {
  const guard = accountGuardFor(app);

  app.get(OVERVIEW_PATH, async (request, reply) => {
    const r = await guard(request, reply);
    if (!r) return reply;
    const { user } = r;
    const pending = await pendingFlash(app, r.session, OVERVIEW_PATH);
    const enabled = twoFactorEnabled(user);
    const [others, remaining] = await Promise.all([
      countSecondaryEmails(db, user),
      enabled ? remainingRecoveryCodes(db, user.id) : Promise.resolve(0),
    ]);
    return sendPage(
      reply,
      200,
      <Layout
        title="Your account"
        user={user}
        csrf={r.csrf}
        section={OVERVIEW_PATH}
        flash={pending.flash}
        lead="What applications see when you sign in with Lanyard, and how your account is protected."
      >
        <div class="overview">
          <section class="panel" aria-labelledby="profile-title">
            <h2 id="profile-title">Your profile</h2>
            <dl>
              <dt>Name</dt>
              <dd id="profile-name">{user.name}</dd>
              <dt>Username</dt>
              <dd id="profile-username">{user.username}</dd>
              <dt>Primary email</dt>
              <dd id="profile-email">
                {user.email}
                {user.confirmed_at ? null : <span class="badge">unconfirmed</span>}
              </dd>
              {others > 0 ? (
                <>
                  <dt>Other emails</dt>
                  <dd id="profile-other-emails">
                    {others === 1 ? '1 address' : `${others} addresses`} (<a href="/-/profile/emails">manage</a>)
                  </dd>
                </>
              ) : null}
            </dl>
            <p class="hint">
              Applications you sign in to receive your name, username and primary email (with the profile and email
              scopes).
            </p>
          </section>

          <section class="panel" aria-labelledby="two-factor-title">
            <h2 id="two-factor-title">Two-factor authentication</h2>
            {enabled ? (
              <>
                <p id="overview-two-factor">
                  <strong>Enabled.</strong> {remaining} of 10 recovery codes remain unused.
                </p>
                {remaining === 0 ? (
                  <p class="flash flash-alert" id="no-recovery-codes">
                    You have no recovery codes left. If you lose your device you cannot sign in. Generate new recovery
                    codes now.
                  </p>
                ) : null}
                <LinkButton href={TWO_FACTOR_PATH} small>
                  {remaining === 0 ? 'Generate recovery codes' : 'Manage two-factor authentication'}
                </LinkButton>
              </>
            ) : (
              <>
                <p id="overview-two-factor">
                  <strong>Not enabled.</strong> Add a code from your phone so a stolen password is not enough to sign in
                  as you.
                </p>
                <LinkButton href={TWO_FACTOR_PATH} variant="primary" small>
                  Set up two-factor authentication
                </LinkButton>
              </>
            )}
          </section>

          <section class="panel" aria-labelledby="places-title">
            <h2 id="places-title">Manage your account</h2>
            <ul class="links">
              {PLACES.map((p) => (
                <li>
                  <a href={p.href}>
                    <strong>{p.label}</strong>
                    <span class="hint">{p.hint}</span>
                  </a>
                </li>
              ))}
            </ul>
          </section>
        </div>
      </Layout>,
    );
  });
}

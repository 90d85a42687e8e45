// The consent page both flows show (authorization code and device): who is asking (the
// application, who registered it), where the answer goes, what it may do in words, the warning,
// "Not you? Sign out", and Authorize (primary) and Deny (secondary) in one form.
import { SCOPE_DESCRIPTIONS, type Scope, sortScopes } from '../../domain/scopes';
import { Button, CsrfField } from '../../pages/components';
import * as React from '../../pages/jsx';
import type { Child, Html } from '../../pages/jsx';
import { Layout, type PageUser } from '../../pages/layout';

/** Who registered the application: a person, or (no owner) the administrator. */
export type ApplicationOwner = { username: string; name: string } | undefined;

export interface ConsentProps {
  user: PageUser;
  csrf: string;
  applicationName: string;
  owner: ApplicationOwner;
  scopes: readonly string[];
  /** Where the form posts (the decision travels as `decision=authorize|deny`). */
  action: string;
  /** The request's parameters, carried by the form (a list: the parameter repeated). */
  hidden: Readonly<Record<string, string | readonly string[] | undefined>>;
  /** RFC 7591: registered by the client itself, so nobody here vouches for it or its name. */
  dynamicallyRegistered?: boolean;
  /** The host the answer is sent to (the authorization code flow). */
  redirectHost?: string;
  /** Where "Not you? Sign out" returns to after the next sign-in: this request again. */
  returnTo: string;
  /** A line for this flow (the device's code). */
  children?: Child;
}

export function ConsentPage(props: ConsentProps): Html {
  return (
    <Layout title="Authorize application" variant="card" user={props.user} csrf={props.csrf}>
      <p class="consent-request" id="consent-request">
        <strong>{props.applicationName}</strong> is requesting access to your account.
      </p>
      {props.dynamicallyRegistered ? (
        <p id="dynamic-client" class="flash flash-alert">
          This application registered itself (dynamically registered): nobody at this site vouches for it or its name.
          Authorize it only if you started this sign-in yourself.
        </p>
      ) : (
        <p id="application-owner" class="muted">
          {props.owner ? (
            <>
              Registered by {props.owner.name} (@{props.owner.username})
            </>
          ) : (
            'Registered by the administrator'
          )}
        </p>
      )}
      <h2 class="consent-heading">This application will be able to:</h2>
      <ul id="scopes" class="scope-list">
        {sortScopes(props.scopes).map((s) => (
          <li data-scope={s}>{SCOPE_DESCRIPTIONS[s as Scope] ?? s}</li>
        ))}
      </ul>
      {props.redirectHost ? (
        <p id="redirect-host">
          You will be sent back to <strong>{props.redirectHost}</strong>.
        </p>
      ) : null}
      {props.children}
      <p class="trust-warning" id="trust-warning">
        Only allow applications you trust.
      </p>
      <form method="post" action={props.action}>
        <CsrfField token={props.csrf} />
        {Object.entries(props.hidden).flatMap(([name, value]) =>
          (value === undefined ? [] : typeof value === 'string' ? [value] : value).map((v) => (
            <input type="hidden" name={name} value={v} />
          )),
        )}
        <div class="actions consent-actions">
          <Button name="decision" value="authorize">
            Authorize
          </Button>
          <Button variant="secondary" name="decision" value="deny">
            Deny
          </Button>
        </div>
      </form>
      <form method="post" action="/users/sign_out" class="not-you">
        <CsrfField token={props.csrf} />
        <input type="hidden" name="return_to" value={props.returnTo} />
        Not you?{' '}
        <button type="submit" class="link-button">
          Sign out
        </button>
      </form>
    </Layout>
  );
}

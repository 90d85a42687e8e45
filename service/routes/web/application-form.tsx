// The application form (new and edit): its fields, reading a submitted form, and where and how a
// refusal is shown. One place per field: a new field is a line in FormValues, readApplicationForm,
// ApplicationFields and FIELDS.
import type { ApplicationRecord } from '../../domain/applications';
import { parseBoolean } from '../../domain/booleans';
import type { DomainError } from '../../domain/errors';
import { MAX_ALLOWED_RESOURCES } from '../../domain/resources';
import { ALL_SCOPES, SCOPE_DESCRIPTIONS } from '../../domain/scopes';
import { formRouteOptions } from '../../http/form-body';
import { Checkbox, CheckboxGroup, type FieldError, fieldErrorOf, TextArea, TextField } from '../../pages/components';
import * as React from '../../pages/jsx';
import type { Html } from '../../pages/jsx';
import { stringParam } from '../../shared/params';

/** Doorkeeper's (GitLab's) form field names: `doorkeeper_application[name]`, … */
const F = 'doorkeeper_application';

export interface ApplicationFormValues {
  name: string;
  redirectUri: string;
  postLogoutRedirectUri: string;
  allowedResources: string;
  backchannelLogoutUri: string;
  backchannelLogoutSessionRequired: boolean;
  scopes: string[];
  confidential: boolean;
  dpopBoundAccessTokens: boolean;
}

/** The form's route options (with `params` for edit): scopes as checkboxes (`[scopes][]`) or one string. */
export const applicationFormOptions = (schema: Parameters<typeof formRouteOptions>[1] = {}) =>
  formRouteOptions(
    {
      strings: [
        `${F}[name]`,
        `${F}[redirect_uri]`,
        `${F}[post_logout_redirect_uri]`,
        `${F}[allowed_resources]`,
        `${F}[backchannel_logout_uri]`,
        `${F}[backchannel_logout_session_required]`,
        `${F}[confidential]`,
        `${F}[scopes]`,
        `${F}[dpop_bound_access_tokens]`,
      ],
      arrays: [`${F}[scopes][]`],
    },
    schema,
  );

/** A new application's form: confidential by default, nothing else filled in. */
export const EMPTY_APPLICATION_FORM: ApplicationFormValues = {
  name: '',
  redirectUri: '',
  postLogoutRedirectUri: '',
  allowedResources: '',
  backchannelLogoutUri: '',
  backchannelLogoutSessionRequired: false,
  scopes: [],
  confidential: true,
  dpopBoundAccessTokens: false,
};

/** The edit form, filled from the application. */
export const applicationFormValues = (a: ApplicationRecord): ApplicationFormValues => ({
  name: a.name,
  redirectUri: a.redirect_uris.join('\n'),
  postLogoutRedirectUri: a.post_logout_redirect_uris.join('\n'),
  allowedResources: (a.allowed_resources ?? []).join('\n'),
  backchannelLogoutUri: a.backchannel_logout_uri ?? '',
  backchannelLogoutSessionRequired: a.backchannel_logout_session_required,
  scopes: a.scopes,
  confidential: a.confidential,
  dpopBoundAccessTokens: a.dpop_bound_access_tokens,
});

export function readApplicationForm(body: Record<string, unknown>): ApplicationFormValues {
  const rawScopes = body[`${F}[scopes][]`] ?? body[`${F}[scopes]`];
  return {
    name: stringParam(body, `${F}[name]`) ?? '',
    redirectUri: stringParam(body, `${F}[redirect_uri]`) ?? '',
    postLogoutRedirectUri: stringParam(body, `${F}[post_logout_redirect_uri]`) ?? '',
    allowedResources: stringParam(body, `${F}[allowed_resources]`) ?? '',
    backchannelLogoutUri: stringParam(body, `${F}[backchannel_logout_uri]`) ?? '',
    backchannelLogoutSessionRequired: parseBoolean(body[`${F}[backchannel_logout_session_required]`]) ?? false,
    scopes: (Array.isArray(rawScopes) ? rawScopes : typeof rawScopes === 'string' ? rawScopes.split(/\s+/) : []).filter(
      (s): s is string => typeof s === 'string' && s !== '',
    ),
    confidential: parseBoolean(body[`${F}[confidential]`]) ?? false,
    dpopBoundAccessTokens: parseBoolean(body[`${F}[dpop_bound_access_tokens]`]) ?? false,
  };
}

/** What the domain's register and update functions take from the form. */
export const applicationInput = (v: ApplicationFormValues) => ({
  name: v.name,
  redirectUris: [v.redirectUri],
  postLogoutRedirectUris: [v.postLogoutRedirectUri],
  allowedResources: [v.allowedResources],
  backchannelLogoutUri: v.backchannelLogoutUri,
  backchannelLogoutSessionRequired: v.backchannelLogoutSessionRequired,
  scopes: v.scopes,
  confidential: v.confidential,
  dpopBoundAccessTokens: v.dpopBoundAccessTokens,
});

/**
 * The form's inputs by the domain's field names, and what each says when the domain refuses it
 * (GOV.UK style: what to do; which rule failed is the domain's business).
 */
/** The words of a list of URIs in one textarea (`what`: "Redirect URI", …), per case. */
const uriListWords = (what: string, example: string) => {
  const inSentence = what[0].toLowerCase() + what.slice(1);
  return {
    blank: `Enter at least one ${inSentence}`,
    fragment: `${what}s must not contain a # fragment`,
    forbidden_scheme: `${what}s must not start with javascript:, data:, vbscript:, file: or blob:`,
    otherwise: `Enter each ${inSentence} on its own line as a full address, like ${example}`,
  };
};

const FIELDS = {
  name: {
    id: 'app_name',
    message: {
      blank: 'Enter a name for the application',
      too_long: 'Name must be 255 characters or fewer',
      otherwise: 'Enter a name of 255 characters or fewer',
    },
  },
  redirect_uri: { id: 'app_redirect_uri', message: uriListWords('Redirect URI', 'https://app.example/callback') },
  post_logout_redirect_uri: {
    id: 'app_post_logout_redirect_uri',
    message: uriListWords('Post-logout redirect URI', 'https://app.example/signed-out'),
  },
  allowed_resources: {
    id: 'app_allowed_resources',
    message: {
      too_many: `Enter ${MAX_ALLOWED_RESOURCES} allowed resources or fewer`,
      fragment: 'Allowed resources must not contain a # fragment',
      user_info: 'Allowed resources must not contain a user name or password',
      not_https: 'Allowed resources must start with https:// (or http:// for localhost, 127.0.0.1 or [::1])',
      otherwise: 'Enter each allowed resource on its own line as a full address, like https://mcp.example.com/mcp',
    },
  },
  backchannel_logout_uri: {
    id: 'app_backchannel_logout_uri',
    message: {
      fragment: 'Back-channel logout URI must not contain a # fragment',
      otherwise: 'Enter the back-channel logout URI as a full http or https address, like https://app.example/logout',
    },
  },
  scopes: {
    id: 'app_scopes',
    message: { blank: 'Select at least one scope', otherwise: 'Select at least one scope from the list' },
  },
};

/** A refusal of the form, at its field (the domain error names it). */
export const applicationFormError = (err: DomainError): FieldError =>
  fieldErrorOf(err, FIELDS, 'The application could not be saved');

/** Rows enough for what is there (a long URI wraps at about 60 characters), 3 to 10. */
const rowsFor = (text: string, least: number) =>
  Math.min(
    10,
    Math.max(least, text.split('\n').reduce((n, line) => n + Math.max(1, Math.ceil(line.length / 60)), 0) + 1),
  );

export function ApplicationFields({
  values,
  errors,
}: {
  values: ApplicationFormValues;
  errors?: readonly FieldError[];
}): Html {
  const error = (id: string) => errors?.find((e) => e.field === id)?.message;
  return (
    <>
      <TextField
        id="app_name"
        name={`${F}[name]`}
        label="Name"
        hint="People see it when the application asks for access."
        value={values.name}
        error={error('app_name')}
        required
        maxlength={255}
      />
      <TextArea
        id="app_redirect_uri"
        name={`${F}[redirect_uri]`}
        label="Redirect URIs"
        hint="One per line. Loopback URIs (127.0.0.1, [::1]) match any port."
        value={values.redirectUri}
        error={error('app_redirect_uri')}
        rows={rowsFor(values.redirectUri, 3)}
        required
      />
      <TextArea
        id="app_post_logout_redirect_uri"
        name={`${F}[post_logout_redirect_uri]`}
        label="Post-logout redirect URIs (optional)"
        hint="One per line. Where people may be sent back to after they sign out through the application. Must match exactly."
        value={values.postLogoutRedirectUri}
        error={error('app_post_logout_redirect_uri')}
        rows={rowsFor(values.postLogoutRedirectUri, 2)}
      />
      <TextArea
        id="app_allowed_resources"
        name={`${F}[allowed_resources]`}
        label="Allowed resources (optional)"
        hint="One per line. The servers this application's tokens may be used at, for example an MCP server. Leave empty to allow any https address."
        value={values.allowedResources}
        error={error('app_allowed_resources')}
        rows={rowsFor(values.allowedResources, 2)}
      />
      <TextField
        id="app_backchannel_logout_uri"
        name={`${F}[backchannel_logout_uri]`}
        label="Back-channel logout URI (optional)"
        hint="Where Lanyard sends a signed sign-out notice when someone's session that used the application ends."
        value={values.backchannelLogoutUri}
        error={error('app_backchannel_logout_uri')}
        maxlength={2000}
      />
      <Checkbox
        id="app_backchannel_logout_session_required"
        name={`${F}[backchannel_logout_session_required]`}
        label="Back-channel logout needs the session (sid)"
        hint="Lanyard always sends sid and sub in logout tokens."
        checked={values.backchannelLogoutSessionRequired}
      />
      <Checkbox
        id="app_confidential"
        name={`${F}[confidential]`}
        label="Confidential"
        hint="The application can keep its secret. Uncheck for native and single-page apps, which must use PKCE."
        checked={values.confidential}
      />
      <CheckboxGroup
        id="app_scopes"
        name={`${F}[scopes][]`}
        legend="Scopes"
        hint="What the application may ask people for."
        options={ALL_SCOPES.map((s) => ({ value: s, label: s, hint: SCOPE_DESCRIPTIONS[s] }))}
        checked={values.scopes}
        error={error('app_scopes')}
      />
      <Checkbox
        id="app_dpop_bound_access_tokens"
        name={`${F}[dpop_bound_access_tokens]`}
        label="Require DPoP"
        hint="The application proves it holds its own key with every token request (DPoP), so a stolen token is useless without that key."
        checked={values.dpopBoundAccessTokens}
      />
    </>
  );
}

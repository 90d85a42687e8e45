// Applications API (GitLab's lib/api/applications.rb, administrators only): instance-wide OAuth
// applications — POST /applications (the secret once), GET /applications, DELETE /applications/:id,
// POST /applications/:id/renew-secret, and beyond GitLab PUT /applications/:id, which keeps the
// application's App ID (GitLab has no update, so Terraform replaces an application on any change).
// The rules and the audit trail are domain/applications.ts's, shared with the CLI and the pages.
import type { FastifyPluginAsync, FastifyRequest } from 'fastify';
import type { AppContext } from '../../app-context';
import {
  type ApplicationRecord,
  deleteApplication,
  findApplicationById,
  listApplications,
  registerApplication,
  rotateApplicationSecret,
  updateApplication,
} from '../../domain/applications';
import { parseBoolean } from '../../domain/booleans';
import { DomainError } from '../../domain/errors';
import { principalOf } from '../../http/authenticate';
import { ApiError, apiNotFound, forbidden } from '../../http/errors';
import { mergedParams } from '../../shared/params';
import { authErrorResponses, badRequestResponse, booleanParam, notFoundResponse } from './schemas';

const applicationProperties = {
  id: { type: 'integer', description: 'The ID of the application (used in the paths)' },
  application_id: { type: 'string', description: 'The App ID: the OAuth client_id' },
  application_name: { type: 'string' },
  callback_url: { type: 'string', description: 'The redirect URIs, one per line' },
  confidential: { type: 'boolean' },
  scopes: { type: 'array', items: { type: 'string' } },
  post_logout_redirect_uris: {
    type: 'array',
    items: { type: 'string' },
    description: 'RP-Initiated Logout: where /oauth/logout may send people back (beyond GitLab)',
  },
  backchannel_logout_uri: {
    type: 'string',
    nullable: true,
    description: 'Back-Channel Logout: where logout tokens are POSTed (beyond GitLab)',
  },
  backchannel_logout_session_required: {
    type: 'boolean',
    description: 'Back-Channel Logout: the application needs sid in logout tokens (always sent; beyond GitLab)',
  },
  dpop_bound_access_tokens: {
    type: 'boolean',
    description: 'RFC 9449 §5.2: every token request must carry a DPoP proof (beyond GitLab; present when true)',
  },
  allowed_resources: {
    type: 'array',
    items: { type: 'string' },
    description: 'RFC 8707 resources its tokens may be for (beyond GitLab); absent: any https or loopback URI',
  },
} as const;
const applicationRequired = [
  'id',
  'application_id',
  'application_name',
  'callback_url',
  'confidential',
  'scopes',
  'post_logout_redirect_uris',
  'backchannel_logout_uri',
  'backchannel_logout_session_required',
];

export const applicationSchema = {
  $id: 'Application',
  type: 'object',
  description: "An instance-wide OAuth application (GitLab's Entities::Application); never its secret",
  properties: applicationProperties,
  required: applicationRequired,
} as const;

export const applicationWithSecretSchema = {
  $id: 'ApplicationWithSecret',
  type: 'object',
  description: 'An application with its client secret, shown only by create and renew-secret',
  properties: { ...applicationProperties, secret: { type: 'string' } },
  required: [...applicationRequired, 'secret'],
} as const;

const FIELDS = {
  name: { type: 'string', description: 'Name of the application' },
  redirect_uri: { type: 'string', description: 'Redirect URIs, separated by whitespace or new lines' },
  scopes: { type: 'string', description: 'Scopes, separated by spaces' },
  confidential: booleanParam('Whether the client secret can be kept confidential (default true)'),
  post_logout_redirect_uris: {
    type: 'array',
    items: { type: 'string' },
    description: 'Post-logout redirect URIs: a list, or one string separated by whitespace; empty for none',
  },
  backchannel_logout_uri: { type: 'string', description: 'Where logout tokens are POSTed; empty for none' },
  backchannel_logout_session_required: booleanParam('The application needs sid in logout tokens (default false)'),
  dpop_bound_access_tokens: booleanParam('Require DPoP-bound access tokens, RFC 9449 (default false)'),
  allowed_resources: {
    type: 'string',
    description:
      'RFC 8707 resource URIs its tokens may be for, separated by whitespace (beyond GitLab); empty: any https or loopback URI',
  },
} as const;
const applicationParams = { type: 'object', properties: FIELDS } as const;
const idParams = {
  type: 'object',
  properties: { id: { type: 'integer', description: 'The ID of the application (not the application_id)' } },
  required: ['id'],
} as const;

const view = (app: ApplicationRecord) => ({
  id: app.id,
  application_id: app.uid,
  application_name: app.name,
  callback_url: app.redirect_uris.join('\n'),
  confidential: app.confidential,
  scopes: app.scopes,
  post_logout_redirect_uris: app.post_logout_redirect_uris,
  backchannel_logout_uri: app.backchannel_logout_uri,
  backchannel_logout_session_required: app.backchannel_logout_session_required,
  // Beyond GitLab's entity, so only when set: GitLab's clients see GitLab's shape.
  ...(app.dpop_bound_access_tokens ? { dpop_bound_access_tokens: true } : {}),
  // Beyond GitLab: only when the application has a list (GitLab's body otherwise).
  ...(app.allowed_resources ? { allowed_resources: app.allowed_resources } : {}),
});

/** GitLab's `authenticated_as_admin!`: 403 {"message":"403 Forbidden"} for anyone else. */
function adminActor(request: FastifyRequest): string {
  const { user } = principalOf(request);
  if (!user.is_admin) throw forbidden();
  return `user:${user.username}`;
}

/** The parameters of a create or an update, from the query string and the body, as Grape reads them. */
function readFields(request: FastifyRequest, required: boolean) {
  const params = mergedParams(request);
  const text = (name: keyof typeof FIELDS) => (typeof params[name] === 'string' ? (params[name] as string) : undefined);
  const fields = { name: text('name'), redirectUri: text('redirect_uri'), scopes: text('scopes') };
  if (required) {
    // Grape's messages, joined as Grape joins them.
    const problems = (['name', 'redirect_uri', 'scopes'] as const).flatMap((n) =>
      params[n] === undefined
        ? [`${n} is missing`]
        : n === 'scopes' && !params[n]?.toString().trim()
          ? [`${n} is empty`]
          : [],
    );
    if (problems.length) throw new ApiError(400, { error: problems.join(', ') });
  }
  const flag = (name: 'confidential' | 'backchannel_logout_session_required' | 'dpop_bound_access_tokens') => {
    if (params[name] === undefined) return undefined;
    const value = parseBoolean(params[name]);
    if (value === undefined) throw new ApiError(400, { error: `${name} is invalid` });
    return value;
  };
  const postLogout = params.post_logout_redirect_uris;
  if (
    postLogout !== undefined &&
    typeof postLogout !== 'string' &&
    !(Array.isArray(postLogout) && postLogout.every((u) => typeof u === 'string'))
  )
    throw new ApiError(400, { error: 'post_logout_redirect_uris is invalid' });
  const backchannel = params.backchannel_logout_uri;
  if (backchannel !== undefined && typeof backchannel !== 'string')
    throw new ApiError(400, { error: 'backchannel_logout_uri is invalid' });
  const resources = text('allowed_resources');
  return {
    name: fields.name,
    allowedResources: resources === undefined ? undefined : resources.trim() ? resources.split(/\s+/) : null,
    // Doorkeeper splits redirect_uri on any whitespace.
    redirectUris: fields.redirectUri === undefined ? undefined : fields.redirectUri.split(/\s+/),
    postLogoutRedirectUris:
      postLogout === undefined
        ? undefined
        : (Array.isArray(postLogout) ? postLogout : [postLogout]).flatMap((u) => u.split(/\s+/)),
    backchannelLogoutUri: backchannel,
    backchannelLogoutSessionRequired: flag('backchannel_logout_session_required'),
    scopes: fields.scopes,
    confidential: flag('confidential'),
    dpopBoundAccessTokens: flag('dpop_bound_access_tokens'),
  };
}

/** An instance-wide application by its numeric id, or GitLab's 404. */
async function instanceApplication(db: AppContext['db'], id: number): Promise<ApplicationRecord> {
  const application = await findApplicationById(db, id);
  if (!application || application.owner_id !== null) throw apiNotFound('Application');
  return application;
}

/** A domain "not found" after the look-up (deleted meanwhile) is GitLab's 404 too. */
const notFoundAsGitLab = (err: unknown): never => {
  if (err instanceof DomainError && err.kind === 'not_found') throw apiNotFound('Application');
  throw err;
};

export const applicationRoutes: FastifyPluginAsync<AppContext> = async (app, { db }) => {
  const tags = ['applications'];
  const adminErrors = { ...authErrorResponses };

  app.post(
    '/applications',
    {
      schema: {
        operationId: 'createApplication',
        summary: 'Create an instance-wide application; the secret is shown once (administrators)',
        tags,
        querystring: applicationParams,
        body: { ...applicationParams, nullable: true },
        response: { 201: { $ref: 'ApplicationWithSecret#' }, 400: badRequestResponse, ...adminErrors },
      },
    },
    async (request, reply) => {
      const actor = adminActor(request);
      const fields = readFields(request, true);
      const { application, secret } = await registerApplication(db, {
        name: fields.name!,
        redirectUris: fields.redirectUris!,
        scopes: fields.scopes!,
        confidential: fields.confidential ?? true,
        postLogoutRedirectUris: fields.postLogoutRedirectUris,
        backchannelLogoutUri: fields.backchannelLogoutUri,
        backchannelLogoutSessionRequired: fields.backchannelLogoutSessionRequired,
        dpopBoundAccessTokens: fields.dpopBoundAccessTokens,
        allowedResources: fields.allowedResources,
        ownerId: null,
        actor,
      });
      return reply.code(201).send({ ...view(application), secret });
    },
  );

  app.get(
    '/applications',
    {
      schema: {
        operationId: 'listApplications',
        summary: 'List the instance-wide applications, without their secrets (administrators)',
        tags,
        querystring: { type: 'object', properties: {} },
        response: { 200: { type: 'array', items: { $ref: 'Application#' } }, ...adminErrors },
      },
    },
    async (request) => {
      adminActor(request);
      return (await listApplications(db, null)).map(view);
    },
  );

  app.put(
    '/applications/:id',
    {
      schema: {
        operationId: 'updateApplication',
        summary: 'Change an application in place, keeping its App ID and secret (beyond GitLab; administrators)',
        tags,
        params: idParams,
        querystring: applicationParams,
        body: { ...applicationParams, nullable: true },
        response: {
          200: { $ref: 'Application#' },
          400: badRequestResponse,
          ...adminErrors,
          404: notFoundResponse('Application'),
        },
      },
    },
    async (request) => {
      const actor = adminActor(request);
      const { id } = request.params as { id: number };
      const existing = await instanceApplication(db, id);
      const fields = readFields(request, false);
      if (fields.scopes !== undefined && !fields.scopes.trim()) throw new ApiError(400, { error: 'scopes is empty' });
      const updated = await updateApplication(db, existing.uid, fields, actor, null).catch(notFoundAsGitLab);
      return view(updated);
    },
  );

  app.delete(
    '/applications/:id',
    {
      schema: {
        operationId: 'deleteApplication',
        summary: 'Delete an application and everything issued to it (administrators)',
        tags,
        params: idParams,
        response: { 204: { type: 'null' }, ...adminErrors, 404: notFoundResponse('Application') },
      },
    },
    async (request, reply) => {
      const actor = adminActor(request);
      const { id } = request.params as { id: number };
      const existing = await instanceApplication(db, id);
      await deleteApplication(db, existing.uid, actor, null).catch(notFoundAsGitLab);
      return reply.code(204).send();
    },
  );

  app.post(
    '/applications/:id/renew-secret',
    {
      schema: {
        operationId: 'renewApplicationSecret',
        summary: 'Give an application a new secret, shown once; the old one stops working at once (administrators)',
        tags,
        params: idParams,
        response: { 201: { $ref: 'ApplicationWithSecret#' }, ...adminErrors, 404: notFoundResponse('Application') },
      },
    },
    async (request, reply) => {
      const actor = adminActor(request);
      const { id } = request.params as { id: number };
      const existing = await instanceApplication(db, id);
      const { application, secret } = await rotateApplicationSecret(db, existing.uid, actor, null).catch(
        notFoundAsGitLab,
      );
      return reply.code(201).send({ ...view(application), secret });
    },
  );
};

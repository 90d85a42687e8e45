// GET /api/v4/user: the authenticated user, in GitLab's shape (scopes read_user, read_api, api).
import type { FastifyPluginAsync } from 'fastify';
import type { AppContext } from '../../app-context';
import type { ApiUser } from '../../domain/access-tokens';
import { principalOf } from '../../http/authenticate';
import { authErrorResponses } from './schemas';

const str = { type: 'string' } as const;
const nullableStr = { type: 'string', nullable: true } as const;
const dateTime = { type: 'string', format: 'date-time', nullable: true } as const;
const bool = { type: 'boolean' } as const;

/** GitLab's API::Entities::UserPublic (plus is_admin for admins). Profile fields Lanyard does not store are empty, as GitLab's defaults. */
export const currentUserProperties = {
  id: { type: 'integer' },
  username: str,
  name: str,
  state: { type: 'string', enum: ['active', 'blocked'] },
  locked: bool,
  avatar_url: nullableStr,
  web_url: str,
  created_at: { type: 'string', format: 'date-time' },
  bio: str,
  location: str,
  public_email: nullableStr,
  skype: str,
  linkedin: str,
  twitter: str,
  discord: str,
  website_url: str,
  organization: str,
  job_title: str,
  pronouns: nullableStr,
  bot: bool,
  work_information: nullableStr,
  followers: { type: 'integer' },
  following: { type: 'integer' },
  is_followed: bool,
  local_time: nullableStr,
  last_sign_in_at: dateTime,
  confirmed_at: dateTime,
  last_activity_on: { type: 'string', format: 'date', nullable: true },
  email: str,
  theme_id: { type: 'integer' },
  color_scheme_id: { type: 'integer' },
  projects_limit: { type: 'integer' },
  current_sign_in_at: dateTime,
  identities: { type: 'array', items: { type: 'object', properties: { provider: str, extern_uid: str } } },
  can_create_group: bool,
  can_create_project: bool,
  two_factor_enabled: bool,
  external: bool,
  private_profile: bool,
  commit_email: str,
  is_admin: { type: 'boolean', description: 'Only for administrators' },
} as const;

export const currentUserSchema = {
  $id: 'CurrentUser',
  type: 'object',
  description: "The authenticated user (GitLab's API::Entities::UserPublic; is_admin for administrators)",
  properties: currentUserProperties,
  // Every field but is_admin is always sent. Listed in full and in order: the serialiser emits
  // required keys first, so this also keeps GitLab's field order.
  required: Object.keys(currentUserProperties).filter((k) => k !== 'is_admin'),
} as const;

const iso = (d: Date | null): string | null => (d ? d.toISOString() : null);

export function currentUserView(user: ApiUser, publicUrl: string, now = new Date()) {
  return {
    id: user.id,
    username: user.username,
    name: user.name,
    state: user.state,
    locked: user.locked_until !== null && user.locked_until.getTime() > now.getTime(),
    avatar_url: user.avatar_url,
    web_url: `${publicUrl}/${user.username}`,
    created_at: user.created_at.toISOString(),
    bio: user.bio,
    location: '',
    public_email: user.public_email,
    skype: '',
    linkedin: '',
    twitter: '',
    discord: '',
    website_url: '',
    organization: '',
    job_title: '',
    pronouns: null,
    bot: false,
    work_information: null,
    followers: 0,
    following: 0,
    is_followed: false,
    local_time: null,
    last_sign_in_at: iso(user.last_sign_in_at),
    confirmed_at: iso(user.confirmed_at),
    last_activity_on: null,
    email: user.email,
    // GitLab's defaults: Gitlab::Themes::APPLICATION_DEFAULT, the light syntax scheme, and
    // ApplicationSetting#default_projects_limit (Lanyard stores no per-user preference).
    theme_id: 3,
    color_scheme_id: 1,
    projects_limit: 100000,
    current_sign_in_at: iso(user.current_sign_in_at),
    identities: [],
    can_create_group: user.can_create_group,
    can_create_project: user.can_create_project,
    two_factor_enabled: user.two_factor_enabled,
    external: user.external,
    private_profile: user.private_profile,
    // GitLab falls back to the primary e-mail when no commit e-mail is chosen.
    commit_email: user.email,
    // GitLab sends is_admin only to administrators.
    ...(user.is_admin ? { is_admin: true } : {}),
  };
}

export const userRoutes: FastifyPluginAsync<AppContext> = async (app, { config }) => {
  app.get(
    '/user',
    {
      config: { allowReadUser: true },
      schema: {
        operationId: 'getCurrentUser',
        summary: 'The authenticated user',
        tags: ['users'],
        querystring: { type: 'object', properties: {} },
        response: { 200: { $ref: 'CurrentUser#' }, ...authErrorResponses },
      },
    },
    async (request) => currentUserView(principalOf(request).user, config.publicUrl),
  );
};

// GitLab's Group and Project entities, for the fields Lanyard holds (API::Entities::Group,
// API::Entities::BasicProjectDetails with `visibility`, API::Entities::NamespaceBasic). Fields in
// GitLab's order; what Lanyard does not store has GitLab's empty value (description "" for a group,
// null for a project, avatar_url null).
import type { GroupRow, ProjectRow } from '../../domain/listing';

const str = { type: 'string' } as const;
const nullableStr = { type: 'string', nullable: true } as const;
const visibility = { type: 'string', enum: ['private', 'internal', 'public'] } as const;
const dateTime = { type: 'string', format: 'date-time' } as const;

const groupProperties = {
  id: { type: 'integer' },
  web_url: str,
  name: str,
  path: str,
  description: str,
  visibility,
  avatar_url: nullableStr,
  full_name: { type: 'string', description: 'The names of the group and its ancestors, joined with " / "' },
  full_path: str,
  created_at: dateTime,
  parent_id: { type: 'integer', nullable: true },
} as const;

export const groupSchema = {
  $id: 'Group',
  type: 'object',
  description: 'A group (GitLab API::Entities::Group, the fields Lanyard holds)',
  properties: groupProperties,
  required: Object.keys(groupProperties),
} as const;

const namespaceProperties = {
  id: { type: 'integer' },
  name: str,
  path: str,
  kind: { type: 'string', enum: ['group'] },
  full_path: str,
  parent_id: { type: 'integer', nullable: true },
  avatar_url: nullableStr,
  web_url: str,
} as const;

export const namespaceSchema = {
  $id: 'Namespace',
  type: 'object',
  description: "The project's namespace (always a group in Lanyard)",
  properties: namespaceProperties,
  required: Object.keys(namespaceProperties),
} as const;

const projectProperties = {
  id: { type: 'integer' },
  description: nullableStr,
  name: str,
  name_with_namespace: str,
  path: str,
  path_with_namespace: str,
  created_at: dateTime,
  web_url: str,
  avatar_url: nullableStr,
  namespace: { $ref: 'Namespace#' },
  visibility,
} as const;

export const projectSchema = {
  $id: 'Project',
  type: 'object',
  description: 'A project (GitLab API::Entities::BasicProjectDetails, the fields Lanyard holds)',
  properties: projectProperties,
  required: Object.keys(projectProperties),
} as const;

export const groupView = (g: GroupRow, publicUrl: string) => ({
  id: g.id,
  web_url: `${publicUrl}/groups/${g.full_path}`,
  name: g.name,
  path: g.path,
  description: '',
  visibility: g.visibility,
  avatar_url: null,
  full_name: g.full_name,
  full_path: g.full_path,
  created_at: g.created_at.toISOString(),
  parent_id: g.parent_id,
});

export const projectView = (p: ProjectRow, publicUrl: string) => ({
  id: p.id,
  description: null,
  name: p.name,
  name_with_namespace: `${p.group_full_name} / ${p.name}`,
  path: p.path,
  path_with_namespace: p.path_with_namespace,
  created_at: p.created_at.toISOString(),
  web_url: `${publicUrl}/${p.path_with_namespace}`,
  avatar_url: null,
  namespace: {
    id: p.group_id,
    name: p.group_name,
    path: p.group_path,
    kind: 'group' as const,
    full_path: p.group_full_path,
    parent_id: p.group_parent_id,
    avatar_url: null,
    web_url: `${publicUrl}/groups/${p.group_full_path}`,
  },
  visibility: p.visibility,
});

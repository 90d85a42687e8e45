// GET /groups, /groups/:id, /projects, /projects/:id: what the caller may see, in GitLab's shapes,
// with GitLab's offset pagination. Scope read_api or api. Clients fetch these before they touch a
// group's or project's notification settings (python-gitlab's groups.get, gitbeaker's Groups.show).
import type { FastifyPluginAsync, FastifyRequest } from 'fastify';
import type { AppContext } from '../../app-context';
import {
  GROUP_ORDERS,
  groupFullName,
  listVisibleGroups,
  listVisibleProjects,
  PROJECT_ORDERS,
  projectWithNamespace,
  type ListFilter,
} from '../../domain/listing';
import { findVisibleGroup, findVisibleProject } from '../../domain/visibility';
import { principalOf } from '../../http/authenticate';
import { ApiError, apiNotFound } from '../../http/errors';
import { parseBoolean } from '../../domain/booleans';
import { parsePagination, setPaginationHeaders } from '../../http/pagination';
import { groupView, projectView } from './namespace-entities';
import { authErrorResponses, badRequestResponse, booleanParam, idParams, notFoundResponse } from './schemas';

const ACCESS_LEVELS = [10, 20, 30, 40, 50];

const listQuery = (orders: readonly string[], defaultOrder: string, defaultSort: string) =>
  ({
    type: 'object',
    properties: {
      page: { type: 'integer', description: 'Current page number (default 1)' },
      per_page: { type: 'integer', description: 'Number of items per page (default 20, at most 100)' },
      search: { type: 'string', description: 'Only those whose name or path contains this (case-insensitive)' },
      owned: booleanParam('Only those the user owns (access level Owner)'),
      membership: booleanParam('Only those the user is a member of (directly or through a parent group)'),
      min_access_level: {
        type: 'integer',
        description: `Only those where the user has at least this access level (${ACCESS_LEVELS.join(', ')})`,
      },
      order_by: { type: 'string', description: `One of ${orders.join(', ')} (default ${defaultOrder})` },
      sort: { type: 'string', description: `asc or desc (default ${defaultSort})` },
    },
  }) as const;

const valueNotValid = (name: string) => new ApiError(400, { error: `${name} does not have a valid value` });

function listFilter<O extends string>(
  request: FastifyRequest,
  orders: readonly O[],
  defaultOrder: O,
  defaultSort: 'asc' | 'desc',
): ListFilter & { orderBy: O } {
  const q = request.query as Record<string, unknown>;
  const orderBy = (q.order_by ?? defaultOrder) as O;
  if (!orders.includes(orderBy)) throw valueNotValid('order_by');
  const sort = q.sort ?? defaultSort;
  if (sort !== 'asc' && sort !== 'desc') throw valueNotValid('sort');
  const minAccessLevel = q.min_access_level as number | undefined;
  if (minAccessLevel !== undefined && !ACCESS_LEVELS.includes(minAccessLevel)) throw valueNotValid('min_access_level');
  const { limit, offset } = parsePagination(q);
  return {
    search: typeof q.search === 'string' && q.search !== '' ? q.search : undefined,
    owned: parseBoolean(q.owned) ?? false,
    membership: parseBoolean(q.membership) ?? false,
    minAccessLevel,
    orderBy,
    sort,
    limit,
    offset,
  };
}

const arrayOf = (ref: string) => ({ type: 'array', items: { $ref: `${ref}#` } }) as const;

export const namespaceRoutes: FastifyPluginAsync<AppContext> = async (app, { db, config }) => {
  app.get(
    '/groups',
    {
      schema: {
        operationId: 'listGroups',
        summary: 'The groups the user may see',
        tags: ['groups'],
        querystring: listQuery(GROUP_ORDERS, 'name', 'asc'),
        response: { 200: arrayOf('Group'), 400: badRequestResponse, ...authErrorResponses },
      },
    },
    async (request, reply) => {
      const filter = listFilter(request, GROUP_ORDERS, 'name', 'asc');
      const page = await listVisibleGroups(db, principalOf(request).user, filter);
      setPaginationHeaders(
        request,
        reply,
        config.publicUrl,
        parsePagination(request.query as Record<string, unknown>),
        page.total,
      );
      return page.rows.map((g) => groupView(g, config.publicUrl));
    },
  );

  app.get(
    '/groups/:id',
    {
      schema: {
        operationId: 'getGroup',
        summary: 'A group, by numeric id or URL-encoded full path',
        tags: ['groups'],
        params: idParams('group'),
        querystring: { type: 'object', properties: {} },
        response: { 200: { $ref: 'Group#' }, ...authErrorResponses, 404: notFoundResponse('Group') },
      },
    },
    async (request) => {
      const { id } = request.params as { id: string };
      const group = await findVisibleGroup(db, principalOf(request).user, id);
      if (!group) throw apiNotFound('Group');
      return groupView({ ...group, full_name: await groupFullName(db, group.id) }, config.publicUrl);
    },
  );

  app.get(
    '/projects',
    {
      schema: {
        operationId: 'listProjects',
        summary: 'The projects the user may see',
        tags: ['projects'],
        querystring: listQuery(PROJECT_ORDERS, 'created_at', 'desc'),
        response: { 200: arrayOf('Project'), 400: badRequestResponse, ...authErrorResponses },
      },
    },
    async (request, reply) => {
      const filter = listFilter(request, PROJECT_ORDERS, 'created_at', 'desc');
      const page = await listVisibleProjects(db, principalOf(request).user, filter);
      setPaginationHeaders(
        request,
        reply,
        config.publicUrl,
        parsePagination(request.query as Record<string, unknown>),
        page.total,
      );
      return page.rows.map((p) => projectView(p, config.publicUrl));
    },
  );

  app.get(
    '/projects/:id',
    {
      schema: {
        operationId: 'getProject',
        summary: 'A project, by numeric id or URL-encoded full path',
        tags: ['projects'],
        params: idParams('project'),
        querystring: { type: 'object', properties: {} },
        response: { 200: { $ref: 'Project#' }, ...authErrorResponses, 404: notFoundResponse('Project') },
      },
    },
    async (request) => {
      const { id } = request.params as { id: string };
      const project = await findVisibleProject(db, principalOf(request).user, id);
      if (!project) throw apiNotFound('Project');
      return projectView(await projectWithNamespace(db, project), config.publicUrl);
    },
  );
};

// GET /groups, /groups/:id, /projects, /projects/:id: what the caller may see, in GitLab's shapes,
// with GitLab's offset pagination. Scope read_api or api. Clients fetch these before they touch a
// group's or project's notification settings (python-gitlab's groups.get, gitbeaker's Groups.show).
import type { FastifyInstance, FastifyPluginAsync, FastifyRequest } from 'fastify';
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
import type { Page } from '../../domain/page';
import { findVisibleGroup, findVisibleProject, type Viewer } from '../../domain/visibility';
import { principalOf } from '../../http/authenticate';
import { ApiError, apiNotFound } from '../../http/errors';
import { parseBoolean } from '../../domain/booleans';
import { type Pagination, parsePagination, setPaginationHeaders } from '../../http/pagination';
import { groupView, projectView } from './namespace-entities';
import {
  authErrorResponses,
  badRequestResponse,
  booleanParam,
  idParams,
  notFoundResponse,
  paginationParams,
} from './schemas';

const ACCESS_LEVELS = [10, 20, 30, 40, 50];

const listQuery = (orders: readonly string[], defaultOrder: string, defaultSort: string) =>
  ({
    type: 'object',
    properties: {
      ...paginationParams,
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

/** The list filter and the page asked for, from one parse of the query string. */
function listFilter<O extends string>(
  request: FastifyRequest,
  orders: readonly O[],
  defaultOrder: O,
  defaultSort: 'asc' | 'desc',
): { filter: ListFilter & { orderBy: O }; pagination: Pagination } {
  const q = request.query as Record<string, unknown>;
  const orderBy = (q.order_by ?? defaultOrder) as O;
  if (!orders.includes(orderBy)) throw valueNotValid('order_by');
  const sort = q.sort ?? defaultSort;
  if (sort !== 'asc' && sort !== 'desc') throw valueNotValid('sort');
  const minAccessLevel = q.min_access_level as number | undefined;
  if (minAccessLevel !== undefined && !ACCESS_LEVELS.includes(minAccessLevel)) throw valueNotValid('min_access_level');
  const pagination = parsePagination(q);
  return {
    filter: {
      search: typeof q.search === 'string' && q.search !== '' ? q.search : undefined,
      owned: parseBoolean(q.owned) ?? false,
      membership: parseBoolean(q.membership) ?? false,
      minAccessLevel,
      orderBy,
      sort,
      limit: pagination.limit,
      offset: pagination.offset,
    },
    pagination,
  };
}

const arrayOf = (ref: string) => ({ type: 'array', items: { $ref: `${ref}#` } }) as const;

/** What differs between /groups and /projects; the routes themselves are the same. */
interface NamespaceKind<O extends string, Row, Entity> {
  /** The collection's path segment and OpenAPI tag. */
  path: 'groups' | 'projects';
  /** Singular, as in the operationIds (listGroups, getGroup), the schema $ref and "404 Group Not Found". */
  name: 'Group' | 'Project';
  orders: readonly O[];
  defaultOrder: O;
  defaultSort: 'asc' | 'desc';
  list: (db: AppContext['db'], viewer: Viewer, filter: ListFilter & { orderBy: O }) => Promise<Page<Row>>;
  find: (db: AppContext['db'], viewer: Viewer, idOrPath: string) => Promise<Entity | undefined>;
  /** The found entity with what its view needs beyond its own row (full name, namespace). */
  complete: (db: AppContext['db'], entity: Entity) => Promise<Row>;
  view: (row: Row, publicUrl: string) => unknown;
}

/** GET /<path> (the visible list, paginated) and GET /<path>/:id (one, by id or full path). */
function namespaceKindRoutes<O extends string, Row, Entity>(
  app: FastifyInstance,
  { db, config }: AppContext,
  kind: NamespaceKind<O, Row, Entity>,
): void {
  const lowerName = kind.path === 'groups' ? 'group' : 'project';
  app.get(
    `/${kind.path}`,
    {
      schema: {
        operationId: `list${kind.name}s`,
        summary: `The ${kind.path} the user may see`,
        tags: [kind.path],
        querystring: listQuery(kind.orders, kind.defaultOrder, kind.defaultSort),
        response: { 200: arrayOf(kind.name), 400: badRequestResponse, ...authErrorResponses },
      },
    },
    async (request, reply) => {
      const { filter, pagination } = listFilter(request, kind.orders, kind.defaultOrder, kind.defaultSort);
      const page = await kind.list(db, principalOf(request).user, filter);
      setPaginationHeaders(request, reply, config.publicUrl, pagination, page.total);
      return page.rows.map((row) => kind.view(row, config.publicUrl));
    },
  );

  app.get(
    `/${kind.path}/:id`,
    {
      schema: {
        operationId: `get${kind.name}`,
        summary: `A ${lowerName}, by numeric id or URL-encoded full path`,
        tags: [kind.path],
        params: idParams(lowerName),
        querystring: { type: 'object', properties: {} },
        response: { 200: { $ref: `${kind.name}#` }, ...authErrorResponses, 404: notFoundResponse(kind.name) },
      },
    },
    async (request) => {
      const { id } = request.params as { id: string };
      const entity = await kind.find(db, principalOf(request).user, id);
      if (!entity) throw apiNotFound(kind.name);
      return kind.view(await kind.complete(db, entity), config.publicUrl);
    },
  );
}

export const namespaceRoutes: FastifyPluginAsync<AppContext> = async (app, context) => {
  namespaceKindRoutes(app, context, {
    path: 'groups',
    name: 'Group',
    orders: GROUP_ORDERS,
    defaultOrder: 'name',
    defaultSort: 'asc',
    list: listVisibleGroups,
    find: findVisibleGroup,
    complete: async (db, group) => ({ ...group, full_name: await groupFullName(db, group.id) }),
    view: groupView,
  });
  namespaceKindRoutes(app, context, {
    path: 'projects',
    name: 'Project',
    orders: PROJECT_ORDERS,
    defaultOrder: 'created_at',
    defaultSort: 'desc',
    list: listVisibleProjects,
    find: findVisibleProject,
    complete: projectWithNamespace,
    view: projectView,
  });
};

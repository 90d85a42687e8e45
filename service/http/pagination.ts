// GitLab's offset pagination for /api/v4 lists: `page` (default 1) and `per_page` (default 20,
// at most 100: larger values are clamped, as Kaminari's max_per_page does in GitLab), validated
// with Grape's messages, and the headers GitLab sends (Gitlab::Pagination::OffsetHeaderBuilder):
// X-Per-Page, X-Page, X-Next-Page, X-Prev-Page, Link (prev/next/first/last), X-Total, X-Total-Pages.
import type { FastifyReply, FastifyRequest } from 'fastify';
import { ApiError } from './errors';

export const DEFAULT_PER_PAGE = 20;
export const MAX_PER_PAGE = 100;
/** Beyond this a page is certainly empty; keeps the SQL offset an exact integer. */
const MAX_PAGE = 2 ** 31;

export interface Pagination {
  page: number;
  perPage: number;
  limit: number;
  offset: number;
}

const invalidParam = (name: string, why = 'is invalid') => new ApiError(400, { error: `${name} ${why}` });

/** Grape's Integer coercion: a decimal integer string (or JSON integer), else "<name> is invalid". */
function integerParam(value: unknown, name: string): number | undefined {
  if (value === undefined) return undefined;
  if (typeof value === 'number' && Number.isInteger(value)) return value;
  if (typeof value === 'string' && /^[+-]?\d{1,30}$/.test(value.trim())) return Number(value.trim());
  throw invalidParam(name);
}

/**
 * The page requested. In GitLab's order: type coercion ("is invalid"), `except_values: [0]` on
 * per_page ("has a value not allowed"), then only positive values ("does not have a valid value").
 */
export function parsePagination(query: Record<string, unknown>): Pagination {
  const page = integerParam(query.page, 'page') ?? 1;
  let perPage = integerParam(query.per_page, 'per_page') ?? DEFAULT_PER_PAGE;
  if (perPage === 0) throw invalidParam('per_page', 'has a value not allowed');
  if (page < 1) throw invalidParam('page', 'does not have a valid value');
  if (perPage < 1) throw invalidParam('per_page', 'does not have a valid value');
  perPage = Math.min(perPage, MAX_PER_PAGE);
  const effectivePage = Math.min(page, MAX_PAGE);
  return { page: effectivePage, perPage, limit: perPage, offset: (effectivePage - 1) * perPage };
}

/** Query parameters never echoed into Link URLs: a token in a header is a secret, in a URL too. */
const SECRET_PARAMS = new Set(['private_token', 'access_token']);

/**
 * GitLab's pagination headers. Link URLs are absolute, built on the public base URL, with the
 * request's own query parameters (sorted, as Rails' to_query) and the page and per_page of each link.
 */
export function setPaginationHeaders(
  request: FastifyRequest,
  reply: FastifyReply,
  publicUrl: string,
  { page, perPage }: Pagination,
  total: number,
): void {
  const totalPages = Math.max(Math.ceil(total / perPage), 1);
  const nextPage = page < totalPages ? page + 1 : undefined;
  // Kaminari: no previous page on the first page or past the last one.
  const prevPage = page > 1 && page <= totalPages ? page - 1 : undefined;
  const path = request.url.split('?')[0];
  const query = Object.entries((request.query ?? {}) as Record<string, unknown>).filter(
    ([k, v]) => !SECRET_PARAMS.has(k) && k !== 'page' && k !== 'per_page' && typeof v === 'string',
  ) as Array<[string, string]>;
  const href = (p: number) => {
    const params: Array<[string, string]> = [...query, ['page', String(p)], ['per_page', String(perPage)]];
    params.sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `${publicUrl}${path}?${new URLSearchParams(params).toString()}`;
  };
  const links: string[] = [];
  if (prevPage) links.push(`<${href(prevPage)}>; rel="prev"`);
  if (nextPage) links.push(`<${href(nextPage)}>; rel="next"`);
  links.push(`<${href(1)}>; rel="first"`);
  links.push(`<${href(totalPages)}>; rel="last"`);
  reply.headers({
    'x-per-page': String(perPage),
    'x-page': String(page),
    'x-next-page': nextPage ? String(nextPage) : '',
    'x-prev-page': prevPage ? String(prevPage) : '',
    link: links.join(', '),
    'x-total': String(total),
    'x-total-pages': String(totalPages),
  });
}

/**
 * One page of a list: `fetch` reads the page's limit and offset; GitLab's headers are set from the
 * total it counts, and the page's rows are returned.
 */
export async function fetchPage<T>(
  request: FastifyRequest,
  reply: FastifyReply,
  publicUrl: string,
  pagination: Pagination,
  fetch: (window: { limit: number; offset: number }) => Promise<{ total: number; rows: T[] }>,
): Promise<T[]> {
  const page = await fetch({ limit: pagination.limit, offset: pagination.offset });
  setPaginationHeaders(request, reply, publicUrl, pagination, page.total);
  return page.rows;
}

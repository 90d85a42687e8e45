// Long account lists, 20 rows a page (`?page=N`): reading the page number, and the Previous / Next
// navigation under a list. Without JavaScript: plain links.
import * as React from './jsx';
import type { Html } from './jsx';

/** Rows on one page of an account list. */
export const PER_PAGE = 20;

/** The `page` query parameter: a positive integer, else 1 (a bad value shows the first page). */
export function pageNumberOf(query: unknown): number {
  const raw = (query as { page?: unknown } | undefined)?.page;
  return typeof raw === 'string' && /^[1-9]\d{0,5}$/.test(raw) ? Number(raw) : 1;
}

/** The rows of page `page`, for a domain list function's limit and offset. */
export const pageWindow = (page: number) => ({ limit: PER_PAGE, offset: (page - 1) * PER_PAGE });

/** Previous / "Page 2 of 3" / Next under a list; nothing when everything fits on one page. */
export function Pagination(props: { path: string; page: number; total: number; label: string }): Html {
  const pages = Math.max(1, Math.ceil(props.total / PER_PAGE));
  if (pages === 1 && props.page === 1) return React.EMPTY;
  const href = (n: number) => (n === 1 ? props.path : `${props.path}?page=${n}`);
  return (
    <nav class="pagination" aria-label={props.label}>
      {props.page > 1 ? (
        <a href={href(Math.min(props.page - 1, pages))} rel="prev">
          Previous
        </a>
      ) : null}
      <span aria-current="page">
        Page {props.page} of {pages}
      </span>
      {props.page < pages ? (
        <a href={href(props.page + 1)} rel="next">
          Next
        </a>
      ) : null}
    </nav>
  );
}

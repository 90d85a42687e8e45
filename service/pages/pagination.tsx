// Long account lists, 20 rows a page (`?page=N`): reading the page number, and the Previous / Next
// navigation under a list. Without JavaScript: plain links. The one rule for a bad page number:
// anything that is not a whole number from 1 to 999999 (0, -1, abc, 10^20) shows the first page; a
// page past the last shows no rows, "Page 9 of 2" and a Previous link to the last page. A page with
// two lists names the second list's parameter (`project_page`, as GitLab's notifications page) and
// keeps the other list's page in its links.
import * as React from './jsx';
import type { Html } from './jsx';

/** Rows on one page of an account list. */
export const PER_PAGE = 20;

/** A page-number query parameter (`page` unless named): a positive integer, else 1. */
export function pageNumberOf(query: unknown, param = 'page'): number {
  const raw = (query as Record<string, unknown> | undefined)?.[param];
  return typeof raw === 'string' && /^[1-9]\d{0,5}$/.test(raw) ? Number(raw) : 1;
}

/** The rows of page `page`, for a domain list function's limit and offset. */
export const pageWindow = (page: number) => ({ limit: PER_PAGE, offset: (page - 1) * PER_PAGE });

/** Previous / "Page 2 of 3" / Next under a list; nothing when everything fits on one page. */
export function Pagination(props: {
  path: string;
  page: number;
  total: number;
  label: string;
  /** The query parameter of this list's page; `page` by default. */
  param?: string;
  /** Other lists' page parameters on the same page, kept in the links (1 is left out). */
  keep?: Record<string, number>;
}): Html {
  const pages = Math.max(1, Math.ceil(props.total / PER_PAGE));
  if (pages === 1 && props.page === 1) return React.EMPTY;
  const href = (n: number) => {
    const query = new URLSearchParams();
    const values: Record<string, number> = { ...props.keep, [props.param ?? 'page']: n };
    for (const name of Object.keys(values).sort()) if (values[name] !== 1) query.set(name, String(values[name]));
    const search = query.toString();
    return search === '' ? props.path : `${props.path}?${search}`;
  };
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

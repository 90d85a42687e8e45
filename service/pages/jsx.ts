// The JSX runtime of the server-rendered pages: every string child and attribute value is
// HTML-escaped; only markup built by this runtime (or passed through `trustedHtml`) is emitted raw.
// Classic JSX factory (tsconfig `jsxFactory: React.createElement`): every .tsx file does
// `import * as React from '…/pages/jsx'` (the conventional name, which Biome's reactClassic mode knows).
import { escapeHtml } from '../shared/html';

/** Markup this runtime produced: the only value a page emits without escaping. */
export class Html {
  constructor(readonly value: string) {}
  toString(): string {
    return this.value;
  }
}

export type Child = Html | string | number | boolean | null | undefined | readonly Child[];
export type AttributeValue = string | number | boolean | null | undefined;
type Component<P> = (props: P & { children?: Child }) => Html;

export { escapeHtml };

/**
 * Markup from a trusted producer (our own QR-code SVG renderer), emitted as is. Never for
 * anything a user, client or database row supplied.
 */
/** Nothing: what a component renders when it has nothing to show. */
export const EMPTY = new Html('');

export const trustedHtml = (markup: string): Html => new Html(markup);

const VOID = new Set(['area', 'base', 'br', 'col', 'embed', 'hr', 'img', 'input', 'link', 'meta', 'source', 'wbr']);
const ATTRIBUTE_NAME = /^[a-zA-Z_:][-a-zA-Z0-9_:.]*$/;
const TAG_NAME = /^[a-z][a-z0-9-]*$/;

function renderChild(child: Child): string {
  if (child instanceof Html) return child.value;
  if (Array.isArray(child)) return child.map(renderChild).join('');
  if (child === null || child === undefined || child === false || child === true) return '';
  return escapeHtml(String(child));
}

function renderAttributes(props: Record<string, unknown>): string {
  let out = '';
  for (const [name, value] of Object.entries(props)) {
    if (
      name === 'children' ||
      name === '__self' ||
      name === '__source' ||
      value === undefined ||
      value === null ||
      value === false
    )
      continue;
    if (!ATTRIBUTE_NAME.test(name)) throw new Error(`invalid attribute name: ${name}`);
    out += value === true ? ` ${name}` : ` ${name}="${escapeHtml(String(value))}"`;
  }
  return out;
}

/** @public The JSX factory: the compiled pages call it (tsconfig `jsxFactory`), not an import. */
export function createElement<P>(
  tag: string | Component<P>,
  props: (P & Record<string, unknown>) | null,
  ...children: Child[]
): Html {
  if (typeof tag === 'function') {
    const given = children.length === 0 ? props?.children : children.length === 1 ? children[0] : children;
    return tag({ ...(props as P), children: given as Child });
  }
  if (!TAG_NAME.test(tag)) throw new Error(`invalid tag name: ${tag}`);
  const attributes = props ? renderAttributes(props) : '';
  if (VOID.has(tag)) return new Html(`<${tag}${attributes}>`);
  return new Html(`<${tag}${attributes}>${renderChild(children)}</${tag}>`);
}

/** @public The JSX fragment factory (tsconfig `jsxFragmentFactory`). */
export function Fragment(props: { children?: Child }): Html {
  return new Html(renderChild(props.children));
}

/** A whole document: the doctype and the root element. */
export const renderDocument = (root: Html): string => `<!DOCTYPE html>\n${root.value}\n`;

type Attributes = { [name: string]: AttributeValue | Child; children?: Child };

/** @public JSX types, looked up next to the factory (TypeScript resolves `React.JSX`). */
export declare namespace JSX {
  type Element = Html;
  interface IntrinsicElements {
    [tag: string]: Attributes;
  }
  interface ElementChildrenAttribute {
    children: unknown;
  }
}

// The copy button next to a value shown once (a secret, an App ID): hidden in the markup, shown and
// wired by the pages' same-origin script, which copies the text of the element `data-copy` selects.
// Without JavaScript it stays hidden and the value is selected by hand.
import * as React from './jsx';
import type { Html } from './jsx';

export function CopyButton(props: { target: string; label: string }): Html {
  return (
    <button type="button" class="button small copy" data-copy={`#${props.target}`} aria-label={props.label} hidden>
      Copy
    </button>
  );
}

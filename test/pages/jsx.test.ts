// The pages' JSX runtime: everything a page interpolates is escaped; only runtime-built markup
// passes through raw. (Called through createElement, as the compiled .tsx files do.)
import { describe, expect, it } from 'vitest';
import { createElement, escapeHtml, Fragment, renderDocument, trustedHtml } from '../../service/pages/jsx';

const hostile = '"><script>alert(1)</script>';

describe('JSX runtime', () => {
  it('escapes text children and attribute values; nested elements pass through', () => {
    expect(escapeHtml(`<a href="x" onclick='y'>&\`</a>`)).toBe(
      '&lt;a href=&quot;x&quot; onclick=&#39;y&#39;&gt;&amp;&#96;&lt;/a&gt;',
    );
    const page = createElement('p', { class: hostile, title: 'ok' }, hostile, createElement('b', null, hostile), [
      1,
      '<2>',
    ]);
    expect(page.value).toBe(
      '<p class="&quot;&gt;&lt;script&gt;alert(1)&lt;/script&gt;" title="ok">&quot;&gt;&lt;script&gt;alert(1)&lt;/script&gt;<b>&quot;&gt;&lt;script&gt;alert(1)&lt;/script&gt;</b>1&lt;2&gt;</p>',
    );
  });

  it('boolean attributes, omitted values, void elements, fragments and components', () => {
    const Greeting = (props: { who: string; children?: unknown }) => createElement('em', null, `hi ${props.who}`);
    expect(
      createElement(
        Fragment,
        null,
        createElement('input', { required: true, disabled: false, value: undefined, name: 'n' }),
        createElement(Greeting, { who: '<you>' }),
        null,
        false,
        true,
      ).value,
    ).toBe('<input required name="n"><em>hi &lt;you&gt;</em>');
  });

  it('a string is never markup unless explicitly trusted; bad tag and attribute names throw', () => {
    expect(createElement('div', null, '<b>x</b>').value).toBe('<div>&lt;b&gt;x&lt;/b&gt;</div>');
    expect(createElement('div', null, trustedHtml('<svg></svg>')).value).toBe('<div><svg></svg></div>');
    expect(() => createElement('div', { 'onclick="x"': 'y' })).toThrow('invalid attribute name');
    expect(() => createElement('x><script', null)).toThrow('invalid tag name');
    expect(renderDocument(createElement('html', { lang: 'en' }))).toBe('<!DOCTYPE html>\n<html lang="en"></html>\n');
  });
});

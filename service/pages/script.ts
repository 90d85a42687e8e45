// The pages' one script, served from our own origin at a content-hashed path (CSP `script-src
// 'self'`). Every page works without it: it only reveals and drives controls that are `hidden` in
// the markup until it runs. Its conventions (docs/pages.md):
//   <button type="button" data-copy="#element-id" hidden>Copy</button>
//       copies the textContent (trimmed) of the element the CSS selector names, and announces
//       "Copied" in the page's aria-live region (#live-status);
//   <button type="button" data-print hidden>Print</button>            prints the page;
//   <button type="button" data-show-password="#input-id" hidden>Show password</button>
//       toggles that input between password and text (aria-pressed says which).
import { createHash } from 'node:crypto';

export const SCRIPT = `(function () {
  'use strict';
  var live;
  function announce(text) {
    if (!live) {
      live = document.getElementById('live-status');
      if (!live) {
        live = document.createElement('div');
        live.id = 'live-status';
        live.className = 'visually-hidden';
        live.setAttribute('aria-live', 'polite');
        document.body.appendChild(live);
      }
    }
    live.textContent = '';
    window.setTimeout(function () { live.textContent = text; }, 50);
  }
  function copyText(text) {
    if (navigator.clipboard && window.isSecureContext) return navigator.clipboard.writeText(text);
    return new Promise(function (resolve, reject) {
      var area = document.createElement('textarea');
      area.value = text;
      area.setAttribute('readonly', '');
      area.className = 'visually-hidden';
      document.body.appendChild(area);
      area.select();
      var ok = false;
      try { ok = document.execCommand('copy'); } catch (e) { ok = false; }
      document.body.removeChild(area);
      if (ok) resolve(); else reject(new Error('copy refused'));
    });
  }
  function each(selector, fn) {
    var nodes = document.querySelectorAll(selector);
    for (var i = 0; i < nodes.length; i++) fn(nodes[i]);
  }
  each('[data-copy]', function (button) {
    var target;
    try { target = document.querySelector(button.getAttribute('data-copy')); } catch (e) { target = null; }
    if (!target) return;
    button.hidden = false;
    button.addEventListener('click', function () {
      copyText(target.textContent.trim()).then(
        function () { announce('Copied'); },
        function () { announce('Copy failed: select the text and copy it yourself'); }
      );
    });
  });
  each('[data-print]', function (button) {
    button.hidden = false;
    button.addEventListener('click', function () { window.print(); });
  });
  each('[data-show-password]', function (button) {
    var input;
    try { input = document.querySelector(button.getAttribute('data-show-password')); } catch (e) { input = null; }
    if (!input) return;
    button.hidden = false;
    button.setAttribute('aria-pressed', 'false');
    button.addEventListener('click', function () {
      var show = input.type === 'password';
      input.type = show ? 'text' : 'password';
      button.setAttribute('aria-pressed', show ? 'true' : 'false');
    });
  });
})();
`;

export const SCRIPT_HASH = createHash('sha256').update(SCRIPT).digest('hex').slice(0, 16);
/** The script's path: a new name for every change, so the long cache never serves a stale copy. */
export const SCRIPT_PATH = `/-/assets/lanyard-${SCRIPT_HASH}.js`;

/** The icon: a badge with an L, as SVG (browsers ask for /favicon.ico whatever the page says). */
export const FAVICON_SVG =
  '<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 32 32"><rect width="32" height="32" rx="7" fill="#1068bf"/>' +
  '<path d="M12 7v17h10" fill="none" stroke="#fff" stroke-width="4" stroke-linecap="round" stroke-linejoin="round"/></svg>\n';

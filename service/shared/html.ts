// HTML escaping: one rule for the pages' JSX runtime and the HTML part of e-mails.

const ESCAPES: Record<string, string> = {
  '&': '&amp;',
  '<': '&lt;',
  '>': '&gt;',
  '"': '&quot;',
  "'": '&#39;',
  '`': '&#96;',
};

/** Text made safe as HTML element content or a quoted attribute value. */
export const escapeHtml = (text: string): string => text.replace(/[&<>"'`]/g, (c) => ESCAPES[c]);

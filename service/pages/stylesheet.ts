// The one stylesheet of every page (light and dark, 360–1440 px), served from our own origin at a
// content-hashed path so it can be cached for a year (CSP `style-src 'self'`: no inline styles).
import { createHash } from 'node:crypto';

export const STYLESHEET = `:root{color-scheme:light dark;--bg:#f6f6f8;--surface:#fff;--text:#1f1e24;--muted:#5c5b62;--border:#d4d4d9;
--primary:#1068bf;--primary-hover:#0b5cad;--link:#1068bf;--on-primary:#fff;--danger:#c02f12;--danger-hover:#a02710;--focus:#428fdc;
--notice-bg:#ecf4ee;--notice-border:#108548;--notice-text:#0a4020;--alert-bg:#fdf1ee;--alert-border:#c02f12;--alert-text:#7a1d0b;
--code-bg:#efeef2;--warning-bg:#fdf6e3;--warning-border:#ab6100;--warning-text:#5c3300;--radius:6px;font-family:system-ui,sans-serif}
@media (prefers-color-scheme:dark){:root{--bg:#18171d;--surface:#232228;--text:#ececef;--muted:#bfbfc3;--border:#434248;
--primary:#1068bf;--primary-hover:#2f83d6;--link:#7db8f0;--danger:#c02f12;--danger-hover:#d8401f;--focus:#63a6e9;
--notice-bg:#0f2a1b;--notice-border:#2da160;--notice-text:#b6e4c6;--alert-bg:#35150e;--alert-border:#ec5941;--alert-text:#fcd0c6;--code-bg:#2e2d33;
--warning-bg:#3a2a0a;--warning-border:#d99530;--warning-text:#f5d9a8}
a{color:#8fc1f2}}
*,*::before,*::after{box-sizing:border-box}
[hidden]{display:none!important}
body{margin:0;background:var(--bg);color:var(--text);font-size:16px;line-height:1.5;overflow-wrap:anywhere}
a{color:var(--link)}
:focus-visible{outline:3px solid var(--focus);outline-offset:2px}
.skip-link{position:absolute;left:-999px;top:0;padding:.5rem 1rem;background:var(--surface);z-index:2}
.skip-link:focus{left:.5rem}
.topbar{display:flex;align-items:center;justify-content:space-between;gap:1rem;flex-wrap:wrap;padding:.6rem 1.25rem;background:#1f1e24;color:#ececef}
.topbar a{color:#ececef}
.brand{font-weight:700;font-size:1.1rem;text-decoration:none;letter-spacing:.02em}
.user-menu{display:flex;align-items:center;gap:.75rem;flex-wrap:wrap;font-size:.95rem}
.user-menu form{margin:0}
.user-menu button{background:transparent;color:#ececef;border:1px solid #77767c;border-radius:var(--radius);padding:.25rem .75rem;font:inherit;cursor:pointer}
.user-menu button:hover{background:#333238}
.shell{display:grid;grid-template-columns:14rem minmax(0,1fr);gap:2rem;max-width:72rem;margin:0 auto;padding:2rem 1.25rem}
.shell.single{grid-template-columns:minmax(0,1fr);max-width:44rem}
.shell.card main{background:var(--surface);border:1px solid var(--border);border-radius:var(--radius);padding:1.5rem 1.75rem;max-width:28rem;width:100%;margin:0 auto}
.shell.card{grid-template-columns:minmax(0,1fr);max-width:32rem}
.side-nav ul{list-style:none;margin:0;padding:0}
.side-nav a{display:block;padding:.45rem .75rem;border-radius:var(--radius);color:var(--text);text-decoration:none}
.side-nav a:hover{background:var(--code-bg)}
.side-nav a[aria-current=page]{background:var(--code-bg);font-weight:600;box-shadow:inset 3px 0 0 var(--primary)}
.side-nav h2{font-size:.8rem;text-transform:uppercase;letter-spacing:.06em;color:var(--muted);margin:0 0 .5rem .75rem}
h1{font-size:1.6rem;line-height:1.25;margin:0 0 1rem}
h2{font-size:1.2rem;margin:2rem 0 .75rem}
h3{font-size:1rem;margin:1.25rem 0 .5rem}
p{margin:.5rem 0 1rem}
.lead{color:var(--muted);margin-top:-.5rem}
.panel{background:var(--surface);border:1px solid var(--border);border-radius:var(--radius);padding:1.25rem 1.5rem;margin:0 0 1.5rem}
.panel>h2:first-child,.panel>h3:first-child{margin-top:0}
.flash{border:1px solid;border-left-width:4px;border-radius:var(--radius);padding:.75rem 1rem;margin:0 0 1.25rem}
.flash-notice{background:var(--notice-bg);border-color:var(--notice-border);color:var(--notice-text)}
.flash-alert,.error-summary{background:var(--alert-bg);border-color:var(--alert-border);color:var(--alert-text)}
.error-summary{border:1px solid;border-left-width:4px;border-radius:var(--radius);padding:.75rem 1rem;margin:0 0 1.25rem}
.error-summary h2{font-size:1rem;margin:0 0 .25rem}
.error-summary ul{margin:0;padding-left:1.25rem}
.error-summary a{color:inherit}
.error-summary:focus{outline:3px solid var(--focus);outline-offset:2px}
.field{margin:0 0 1.1rem}
.field>label,fieldset legend{display:block;font-weight:600;margin-bottom:.3rem}
.hint{display:block;color:var(--muted);font-size:.9rem;margin:-.15rem 0 .35rem}
.field-error{display:block;color:var(--danger);font-weight:600;font-size:.9rem;margin:0 0 .35rem}
@media (prefers-color-scheme:dark){.field-error{color:#f28b75}}
input[type=text],input[type=password],input[type=email],input[type=date],textarea,select{width:100%;max-width:32rem;padding:.5rem .65rem;font:inherit;color:var(--text);background:var(--surface);border:1px solid #89888d;border-radius:var(--radius)}
.field.invalid input,.field.invalid textarea,.field.invalid select{border-color:var(--danger);border-width:2px}
fieldset{border:0;padding:0;margin:0 0 1.1rem;min-width:0}
.check{display:flex;gap:.6rem;align-items:flex-start;margin:.35rem 0}
.check input{margin-top:.3rem;width:1.05rem;height:1.05rem;flex:none}
.check .hint{margin:0}
.check>label{font-weight:400}
.list select{width:auto;max-width:100%}
.actions{display:flex;flex-wrap:wrap;gap:.6rem;align-items:center;margin-top:1.25rem}
.button{display:inline-block;padding:.5rem 1rem;font:inherit;font-weight:600;line-height:1.4;border-radius:var(--radius);border:1px solid var(--border);background:var(--surface);color:var(--text);cursor:pointer;text-decoration:none;text-align:center}
.button:hover{background:var(--code-bg)}
.button.primary{background:var(--primary);border-color:var(--primary);color:var(--on-primary)}
.button.primary:hover{background:var(--primary-hover)}
.button.danger{background:var(--danger);border-color:var(--danger);color:#fff}
.button.danger:hover{background:var(--danger-hover)}
.button.small{padding:.25rem .65rem;font-size:.9rem}
.inline-form{display:inline;margin:0}
.link-button{background:none;border:0;padding:0;font:inherit;color:var(--link);text-decoration:underline;cursor:pointer}
.scope-list{padding-left:1.25rem;margin:.25rem 0 1rem}.scope-list li{margin:.25rem 0}
.consent-heading{font-size:1rem;margin:1.25rem 0 .25rem}
.trust-warning{border-left:4px solid var(--warning-border);background:var(--warning-bg);padding:.5rem .75rem;border-radius:var(--radius)}
.not-you{margin:1.25rem 0 0;color:var(--muted)}
.copyable{display:flex;gap:.5rem;align-items:flex-start;margin:0 0 1rem}.copyable .secret{margin:0;flex:1;min-width:0}
.details{display:grid;grid-template-columns:max-content minmax(0,1fr);gap:.6rem 1.25rem;margin:0 0 1.5rem}
.details dt{font-weight:600}.details dd{margin:0;min-width:0;overflow-wrap:anywhere}
.details dd .copyable{margin:0}.uri-list{list-style:none;margin:0;padding:0}.uri-list li{overflow-wrap:anywhere;margin:0 0 .35rem}
.actions+p{margin-top:1.25rem}.expiry .badge{margin:0 0 0 .4rem}
.pagination{display:flex;gap:1rem;align-items:center;justify-content:center;margin:1rem 0}
.expiring-soon time{font-weight:600}
.badge-warning{background:var(--warning-bg);border-color:var(--warning-border);color:var(--warning-text)}
.page-actions{display:flex;flex-wrap:wrap;gap:.6rem;align-items:center;justify-content:space-between;margin:0 0 1rem}
.page-actions h2{margin:0}
table.list{width:100%;border-collapse:collapse;background:var(--surface);border:1px solid var(--border);border-radius:var(--radius)}
.list th,.list td{padding:.65rem .85rem;text-align:left;vertical-align:top;border-bottom:1px solid var(--border);overflow-wrap:break-word}
.list td code,.list td.url{word-break:break-all}
.list td.address{overflow-wrap:anywhere;min-width:12rem}
.nowrap,.expiry .muted,time,#device-code strong{white-space:nowrap}
time.moment{white-space:normal}
.passkey-sign-in{margin-top:1.25rem}
.list th{font-size:.85rem;color:var(--muted);font-weight:600;background:var(--bg)}
.list td.actions-cell{white-space:nowrap;text-align:right}
@media (max-width:36rem){.details{grid-template-columns:minmax(0,1fr);gap:.15rem}.details dd{margin-bottom:.6rem}}
@media (max-width:48rem){.shell{grid-template-columns:minmax(0,1fr);gap:1rem;padding:1rem .85rem}
.side-nav ul{display:flex;flex-wrap:wrap;gap:.25rem}.side-nav h2{display:none}
.side-nav a[aria-current=page]{box-shadow:inset 0 -3px 0 var(--primary)}
.list thead{display:none}.list,.list tbody,.list tr,.list td{display:block;width:100%}
.list tr{border-bottom:1px solid var(--border);padding:.5rem 0}.list td{border:0;padding:.25rem .85rem}
.list td[data-label]::before{content:attr(data-label);display:block;font-size:.8rem;color:var(--muted);font-weight:600}
.list td.actions-cell{text-align:left}.shell.card main{padding:1.25rem}.panel{padding:1rem}}
code,.secret{font-family:ui-monospace,monospace;font-size:.92em}
code{background:var(--code-bg);padding:.1rem .3rem;border-radius:4px}
.secret{display:block;background:var(--code-bg);border:1px solid var(--border);border-radius:var(--radius);padding:.6rem .75rem;margin:0 0 1rem;word-break:break-all;user-select:all}
.codes{display:grid;grid-template-columns:repeat(auto-fill,minmax(9rem,1fr));gap:.4rem;list-style:none;padding:0;margin:0 0 1rem}
.copyable{display:flex;flex-wrap:wrap;gap:.5rem;align-items:flex-start;margin:0 0 1rem}
.copyable .secret{flex:1 1 14rem;margin:0;min-width:0}
#otp-secret{word-break:normal}
details{margin:0 0 1rem}
summary{cursor:pointer;color:var(--link)}
.show-password{margin:-.6rem 0 1rem}
.link-button{background:none;border:0;padding:0;font:inherit;color:var(--link);text-decoration:underline;cursor:pointer}
.other-user{margin:1.25rem 0 0;padding-top:1rem;border-top:1px solid var(--border)}
.saved-step{margin-top:1.25rem;padding-top:1rem;border-top:1px solid var(--border)}
.error-code{color:var(--muted);font-size:.9rem;border-top:1px solid var(--border);padding-top:.75rem}
.error-code p{margin:.25rem 0}
.overview dl{display:grid;grid-template-columns:minmax(7rem,max-content) minmax(0,1fr);gap:.4rem 1rem;margin:0 0 1rem}
.overview dt{font-weight:600;color:var(--muted)}
.overview dd{margin:0}
.overview ul.links{list-style:none;padding:0;margin:0;display:grid;grid-template-columns:repeat(auto-fill,minmax(14rem,1fr));gap:.5rem}
.overview ul.links li{display:grid}
.overview ul.links a{display:block;padding:.6rem .75rem;border:1px solid var(--border);border-radius:var(--radius);text-decoration:none;background:var(--surface)}
.overview ul.links a:hover{background:var(--code-bg)}
@media print{.topbar,.side-nav,.skip-link,.lead,.flash,form,button,.button,.panel:not(#recovery-codes){display:none!important}
body,.panel{background:#fff;color:#000;border:0}.shell{display:block;padding:0}}
.codes .secret{margin:0;word-break:normal;white-space:nowrap;padding:.4rem .45rem;font-size:.85rem;text-align:center}
.badge{display:inline-block;white-space:nowrap;font-size:.8rem;padding:.05rem .5rem;border-radius:1rem;background:var(--code-bg);border:1px solid var(--border);margin:0 .25rem .25rem 0}
.muted{color:var(--muted)}
.visually-hidden{position:absolute;width:1px;height:1px;overflow:hidden;clip:rect(0 0 0 0);white-space:nowrap}
.qr{background:#fff;padding:.5rem;border-radius:var(--radius);width:12rem;height:12rem;border:1px solid var(--border)}
.qr svg{display:block;width:100%;height:100%}
`;

export const STYLESHEET_HASH = createHash('sha256').update(STYLESHEET).digest('hex').slice(0, 16);
/** The stylesheet's path: a new name for every change, so the long cache never serves a stale copy. */
export const STYLESHEET_PATH = `/-/assets/lanyard-${STYLESHEET_HASH}.css`;

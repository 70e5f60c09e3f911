import type { DashboardSession } from '../../store/store.js';
import { html, type SafeHtml } from '../html.js';
import { ASSETS } from '../assets/asset-files.js';
import { CSRF_FIELD } from '../session.js';

export type Section = 'tokens' | 'usage' | 'try-it' | 'batch';

export interface PageOptions {
  title: string;
  /** The CSRF token of this page's forms (also in a meta tag for the script). */
  csrf: string;
  /** Signed in: shows the navigation and the sign-out button. */
  session?: DashboardSession;
  active?: Section;
  body: SafeHtml;
}

const LOGO = html`<svg width="26" height="26" viewBox="0 0 32 32" aria-hidden="true"><rect width="32" height="32" rx="8" fill="#3b5bdb"/><path d="M8 22 L14 10 L18 17 L20 14 L24 22 Z" fill="#fff"/><circle cx="21.5" cy="9.5" r="2.5" fill="#ffd43b"/></svg>`;

const NAV: [Section, string, string][] = [
  ['tokens', 'Tokens', '/dashboard/tokens'],
  ['usage', 'Usage', '/dashboard/usage'],
  ['try-it', 'Try it', '/dashboard/try-it'],
  ['batch', 'Batch', '/dashboard/batch'],
];

/** A hidden form field carrying the CSRF token. */
export const csrfField = (csrf: string) => html`<input type="hidden" name="${CSRF_FIELD}" value="${csrf}">`;

/** The HTML document around every dashboard page. */
export function renderPage(options: PageOptions): string {
  const { title, csrf, session, active, body } = options;
  const nav = session
    ? html`<nav class="nav" aria-label="Dashboard">${NAV.map(
        ([section, label, href]) => html`<a href="${href}"${section === active ? html` aria-current="page"` : ''}>${label}</a>`,
      )}<a href="/docs">API reference</a></nav>
      <div class="who"><span class="email">${session.account.email}</span>
        <form method="post" action="/dashboard/sign-out">${csrfField(csrf)}<button class="button link" type="submit">Sign out</button></form>
      </div>`
    : '';
  return html`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="csrf-token" content="${csrf}">
<title>${title} · Cutout</title>
<link rel="stylesheet" href="${ASSETS.css.path}">
<link rel="icon" href="data:,">
<script src="${ASSETS.js.path}" defer></script>
</head>
<body>
<a class="skip" href="#main">Skip to content</a>
<header class="topbar"><div class="topbar-inner">
  <a class="brand" href="/dashboard">${LOGO}<span>Cutout</span></a>
  ${nav}
</div></header>
<main id="main" tabindex="-1">
${body}
</main>
</body>
</html>
`.text;
}

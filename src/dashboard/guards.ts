import type { FastifyReply, FastifyRequest } from 'fastify';
import { CutoutError } from '../errors.js';
import { html } from './html.js';
import { csrfToken, hasValidCsrfToken } from './session.js';
import { renderPage } from './views/layout.js';

/** One text field of a parsed form body; '' when it is missing or sent twice. */
export function formField(request: FastifyRequest, name: string): string {
  const value = (request.body as Record<string, unknown> | undefined)?.[name];
  return typeof value === 'string' ? value : '';
}

/** Sends a dashboard page: HTML that no cache keeps (it may hold a Token ID). */
export function sendPage(reply: FastifyReply, page: string, status = 200): FastifyReply {
  return reply.code(status).type('text/html; charset=utf-8').header('cache-control', 'no-store').send(page);
}

/** preHandler of the pages for signed-in owners: anyone else goes to sign-in (or to setup on a fresh install). */
export async function requireSignedIn(request: FastifyRequest, reply: FastifyReply): Promise<void> {
  if (request.dashboardSession) return;
  const fresh = !(await request.server.dashboard.accounts.hasAccounts());
  await reply.redirect(fresh ? '/dashboard/setup' : '/dashboard/sign-in', 303);
}

/** preHandler of every form post: refuses one without its page's CSRF token, with a page that says what to do. */
export async function requireCsrfForm(request: FastifyRequest, reply: FastifyReply): Promise<void> {
  if (hasValidCsrfToken(request)) return;
  request.log.info('dashboard form refused: CSRF token missing or wrong');
  const body = html`<div class="card narrow"><h1>This form has expired</h1>
    <p>The form was sent without the code that proves it came from this page (perhaps it was open for a long time, or you signed in elsewhere since).</p>
    <p><a class="button" href="/dashboard">Back to the dashboard</a></p></div>`;
  await sendPage(reply, renderPage({ title: 'Form expired', csrf: csrfToken(request, reply), session: request.dashboardSession, body }), 403);
}

/** onRequest hook of the dashboard's JSON endpoints (try-it): a session, never a token. */
export async function requireSessionForApi(request: FastifyRequest): Promise<void> {
  if (!request.dashboardSession) throw new CutoutError('missing_token', 'Sign in to the dashboard first: this endpoint takes the dashboard session cookie, not a token.');
}

/** preHandler of the JSON endpoints: the CSRF token in the `x-csrf-token` header. */
export async function requireCsrfHeader(request: FastifyRequest): Promise<void> {
  if (!hasValidCsrfToken(request)) throw new CutoutError('invalid_request', 'The x-csrf-token header is missing or does not belong to this session; reload the page.');
}

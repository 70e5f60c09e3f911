import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import type { FastifyReply, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import './dashboard-services.js';

/** The signed-in owner's session secret. */
export const SESSION_COOKIE = 'cutout_session';
/** A random seed for the CSRF token of the forms shown before sign-in. */
const PRESESSION_COOKIE = 'cutout_presession';
/** Forms send the token as this field, scripts as the `x-csrf-token` header. */
export const CSRF_FIELD = '_csrf';

/** Cookies are sent to the dashboard only, never to the API. */
const cookieOptions = (request: FastifyRequest) => ({ path: '/dashboard', httpOnly: true, sameSite: 'lax' as const, secure: request.protocol === 'https' });

/** The CSRF token for a seed: an HMAC, so the page never shows the cookie's own secret. */
const tokenFor = (seed: string) => createHmac('sha256', seed).update('cutout-dashboard-csrf').digest('base64url');

/**
 * The CSRF token forms on this page must send back. Bound to the session once signed in
 * (a new one at every sign-in); before that, to a pre-session cookie set here if missing.
 */
export function csrfToken(request: FastifyRequest, reply: FastifyReply): string {
  if (request.dashboardSessionSecret) return tokenFor(request.dashboardSessionSecret);
  let seed = request.cookies[PRESESSION_COOKIE];
  if (!seed || seed.length > 100) {
    seed = randomBytes(32).toString('base64url');
    reply.setCookie(PRESESSION_COOKIE, seed, cookieOptions(request));
    request.cookies[PRESESSION_COOKIE] = seed;
  }
  return tokenFor(seed);
}

/** True when the request carries the CSRF token of its session (or pre-session) cookie. */
export function hasValidCsrfToken(request: FastifyRequest): boolean {
  const seed = request.dashboardSessionSecret ?? request.cookies[PRESESSION_COOKIE];
  const body = request.body as Record<string, unknown> | undefined;
  const header = request.headers['x-csrf-token'];
  const sent = typeof body?.[CSRF_FIELD] === 'string' ? (body[CSRF_FIELD] as string) : typeof header === 'string' ? header : undefined;
  if (!seed || !sent) return false;
  const expected = Buffer.from(tokenFor(seed));
  const given = Buffer.from(sent);
  return expected.length === given.length && timingSafeEqual(expected, given);
}

/** Sets the session cookie for a session that has just started. */
export function setSessionCookie(request: FastifyRequest, reply: FastifyReply, secret: string, expiresAt: Date): void {
  reply.setCookie(SESSION_COOKIE, secret, { ...cookieOptions(request), expires: expiresAt });
  reply.clearCookie(PRESESSION_COOKIE, cookieOptions(request));
}

export function clearSessionCookie(request: FastifyRequest, reply: FastifyReply): void {
  reply.clearCookie(SESSION_COOKIE, cookieOptions(request));
}

/**
 * Reads the session cookie on every dashboard request and sets `request.dashboardSession`
 * when it names a live session. Needs @fastify/cookie and `app.dashboard` in the same scope.
 */
export const sessionPlugin = fp(
  async (app) => {
    app.decorateRequest('dashboardSession', undefined);
    app.decorateRequest('dashboardSessionSecret', undefined);
    app.addHook('onRequest', async (request) => {
      const secret = request.cookies[SESSION_COOKIE];
      const session = await app.dashboard.accounts.findSession(secret);
      if (session) {
        request.dashboardSession = session;
        request.dashboardSessionSecret = secret;
      }
    });
  },
  { name: 'cutout-dashboard-session', dependencies: ['@fastify/cookie'] },
);

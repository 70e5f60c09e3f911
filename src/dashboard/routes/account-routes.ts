import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import { AccountEmailTakenError } from '../../store/store.js';
import { newAccountProblem, normalizeEmail } from '../account-service.js';
import { formField, requireCsrfForm, sendPage } from '../guards.js';
import { clearSessionCookie, csrfToken, setSessionCookie } from '../session.js';
import { setupPage, signInPage } from '../views/auth-pages.js';

const minutes = (ms: number) => Math.max(1, Math.ceil(ms / 60_000));

async function signInAs(request: FastifyRequest, reply: FastifyReply, accountId: string): Promise<FastifyReply> {
  const { secret, expiresAt } = await request.server.dashboard.accounts.startSession(accountId);
  setSessionCookie(request, reply, secret, expiresAt);
  return reply.redirect('/dashboard/tokens', 303);
}

/**
 * Setup (the first account, behind the setup code), sign-in and sign-out. Failed sign-ins
 * are throttled per account and per address; wrong setup codes per address.
 */
export const accountRoutes: FastifyPluginAsync = async (app) => {
  const { accounts, setupCode, accountThrottle, addressThrottle } = app.dashboard;

  app.get('/setup', async (request, reply) => {
    if (await accounts.hasAccounts()) return reply.redirect(request.dashboardSession ? '/dashboard/tokens' : '/dashboard/sign-in', 303);
    return sendPage(reply, setupPage(csrfToken(request, reply)));
  });

  app.post('/setup', { preHandler: requireCsrfForm }, async (request, reply) => {
    if (await accounts.hasAccounts()) return reply.redirect('/dashboard/sign-in', 303);
    const email = formField(request, 'email');
    const password = formField(request, 'password');
    const refuse = (error: string, status: number) => sendPage(reply, setupPage(csrfToken(request, reply), { email, error }), status);
    const wait = await addressThrottle.blockedFor(request.ip);
    if (wait > 0) return refuse(`Too many wrong setup codes from your address; try again in ${minutes(wait)} minutes.`, 429);
    if (!setupCode.matches(formField(request, 'setup_code'))) {
      await addressThrottle.fail(request.ip);
      request.log.warn('dashboard setup refused: wrong setup code');
      return refuse('That is not the setup code. It is in the server log, on the line that starts with "No account yet".', 403);
    }
    const problem = newAccountProblem(email, password) ?? (password === formField(request, 'password_again') ? undefined : 'The two passwords differ.');
    if (problem) return refuse(problem, 400);
    // Another request (at this replica or another one) may have used the code meanwhile.
    if (!(await setupCode.use())) return reply.redirect('/dashboard/sign-in', 303);
    try {
      const account = await accounts.createAccount(email, password);
      request.log.info({ accountId: account.id }, 'dashboard: first account created through the setup page');
      return await signInAs(request, reply, account.id);
    } catch (error) {
      if (!(error instanceof AccountEmailTakenError)) throw error;
      return reply.redirect('/dashboard/sign-in', 303);
    }
  });

  app.get('/sign-in', async (request, reply) => {
    if (request.dashboardSession) return reply.redirect('/dashboard/tokens', 303);
    if (!(await accounts.hasAccounts())) return reply.redirect('/dashboard/setup', 303);
    const signedOut = (request.query as Record<string, unknown>)['signed-out'] !== undefined;
    return sendPage(reply, signInPage(csrfToken(request, reply), signedOut ? { notice: 'You have signed out.' } : {}));
  });

  app.post('/sign-in', { preHandler: requireCsrfForm }, async (request, reply) => {
    const email = formField(request, 'email');
    const accountKey = normalizeEmail(email);
    const refuse = (error: string, status: number) => sendPage(reply, signInPage(csrfToken(request, reply), { email, error }), status);
    const wait = Math.max(await accountThrottle.blockedFor(accountKey), await addressThrottle.blockedFor(request.ip));
    if (wait > 0) {
      request.log.warn('dashboard sign-in throttled');
      return refuse(`Too many failed sign-ins; try again in ${minutes(wait)} minutes.`, 429);
    }
    const account = await accounts.authenticate(email, formField(request, 'password'));
    if (!account) {
      await Promise.all([accountThrottle.fail(accountKey), addressThrottle.fail(request.ip)]);
      request.log.info('dashboard sign-in failed');
      return refuse('The email or the password is wrong.', 401);
    }
    await accountThrottle.reset(accountKey);
    request.log.info({ accountId: account.id }, 'dashboard sign-in');
    return signInAs(request, reply, account.id);
  });

  app.post('/sign-out', { preHandler: requireCsrfForm }, async (request, reply) => {
    if (request.dashboardSessionSecret) await accounts.endSession(request.dashboardSessionSecret);
    clearSessionCookie(request, reply);
    return reply.redirect('/dashboard/sign-in?signed-out', 303);
  });
};

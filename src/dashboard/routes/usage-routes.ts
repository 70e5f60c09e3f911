import type { FastifyPluginAsync } from 'fastify';
import { requireSignedIn, sendPage } from '../guards.js';
import { csrfToken } from '../session.js';
import { lastDays, summarizeUsage } from '../usage-summary.js';
import { usagePage } from '../views/usage-page.js';

/** The Usage section: 30 days of the signed-in account's background requests. */
export const usageRoutes: FastifyPluginAsync = async (app) => {
  app.get('/usage', { preHandler: requireSignedIn }, async (request, reply) => {
    const session = request.dashboardSession!;
    const days = lastDays(new Date());
    const [tokens, rows] = await Promise.all([app.tokens.listUserTokens(session.account.id), app.store.listDailyUsage(session.account.id, days[0])]);
    return sendPage(reply, usagePage({ session, csrf: csrfToken(request, reply), tokens, summary: summarizeUsage(rows, days) }));
  });
};

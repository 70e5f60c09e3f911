import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import { WEBHOOK_SECRET_OVERLAP_MS } from '../../auth/webhook-secrets.js';
import { TokenNameTakenError } from '../../store/store.js';
import { formField, requireCsrfForm, requireSignedIn, sendPage } from '../guards.js';
import { csrfToken } from '../session.js';
import { lastDays, summarizeUsage } from '../usage-summary.js';
import { revokePage, tokensPage, webhookSecretPage, type TokensPageOptions } from '../views/tokens-page.js';

const DATE = /^\d{4}-\d{2}-\d{2}$/;

/** This server's own address as the browser sees it, for the curl command shown with a new token. */
function origin(request: FastifyRequest): string {
  return `${request.protocol}://${request.host}`;
}

/**
 * The Tokens section: list (with 30 days' removals), create (the Token ID shown once, in
 * the answer to the form, never stored), make a token's webhook signing secret (likewise shown
 * once) and revoke, each after a confirmation page.
 */
export const tokenRoutes: FastifyPluginAsync = async (app) => {
  app.addHook('preHandler', requireSignedIn);

  const render = async (request: FastifyRequest, reply: FastifyReply, extra: Partial<TokensPageOptions> = {}, status = 200) => {
    const session = request.dashboardSession!;
    const days = lastDays(new Date());
    const [tokens, usage] = await Promise.all([app.tokens.listUserTokens(session.account.id), app.store.listDailyUsage(session.account.id, days[0])]);
    const summary = summarizeUsage(usage, days);
    const removals = new Map([...summary.perToken].map(([id, { total }]) => [id, total.succeeded]));
    const page = tokensPage({ session, csrf: csrfToken(request, reply), tokens, removals, now: new Date().toISOString(), ...extra });
    return sendPage(reply, page, status);
  };

  app.get('/tokens', async (request, reply) => {
    const revokedId = (request.query as Record<string, unknown>).revoked;
    const revoked = typeof revokedId === 'string' ? (await app.tokens.listUserTokens(request.dashboardSession!.account.id)).find((t) => t.id === revokedId && t.revokedAt) : undefined;
    return render(request, reply, revoked ? { notice: `Revoked “${revoked.name}”. Its managed tokens are refused from now on.` } : {});
  });

  app.post('/tokens', { preHandler: requireCsrfForm }, async (request, reply) => {
    const name = formField(request, 'name').trim();
    const expires = formField(request, 'expires').trim();
    const refuse = (error: string) => render(request, reply, { error, form: { name, expires } }, 400);
    if (!name) return refuse('Give the token a name.');
    if (name.length > 100) return refuse('The name may have at most 100 characters.');
    let expiresAt: Date | null = null;
    if (expires) {
      expiresAt = new Date(`${expires}T00:00:00Z`);
      if (!DATE.test(expires) || Number.isNaN(expiresAt.getTime())) return refuse('The expiry date must be a date like 2027-01-31.');
      if (expiresAt <= new Date()) return refuse('The expiry date must be in the future.');
    }
    try {
      const { tokenId, token } = await app.tokens.createUserToken(name, expiresAt, request.dashboardSession!.account.id);
      request.log.info({ userTokenId: token.id }, 'dashboard: user token created');
      const exchangeCommand = `curl -s -X POST ${origin(request)}/api/v1/auth/token -H "token: ${tokenId}"`;
      return render(request, reply, { created: { name: token.name, tokenId, exchangeCommand } });
    } catch (error) {
      if (error instanceof TokenNameTakenError) return refuse(`An active token is already named “${name}”; choose another name or revoke that one first.`);
      throw error;
    }
  });

  /** The signed-in account's token with this id, or undefined (also for another account's). */
  const ownToken = async (request: FastifyRequest) => {
    const { id } = request.params as { id: string };
    return (await app.tokens.listUserTokens(request.dashboardSession!.account.id)).find((token) => token.id === id);
  };

  app.get('/tokens/:id/revoke', async (request, reply) => {
    const token = await ownToken(request);
    if (!token || token.revokedAt) return reply.redirect('/dashboard/tokens', 303);
    return sendPage(reply, revokePage(request.dashboardSession!, csrfToken(request, reply), token));
  });

  app.post('/tokens/:id/revoke', { preHandler: requireCsrfForm }, async (request, reply) => {
    const token = await ownToken(request);
    if (!token) return reply.redirect('/dashboard/tokens', 303);
    await app.tokens.revokeUserToken(token.id, request.dashboardSession!.account.id);
    request.log.info({ userTokenId: token.id }, 'dashboard: user token revoked');
    return reply.redirect(`/dashboard/tokens?revoked=${encodeURIComponent(token.id)}`, 303);
  });

  app.get('/tokens/:id/webhook-secret', async (request, reply) => {
    const token = await ownToken(request);
    if (!token || token.revokedAt) return reply.redirect('/dashboard/tokens', 303);
    const signing = await app.store.findSigningGenerations(token.id, new Date().toISOString());
    return sendPage(reply, webhookSecretPage(request.dashboardSession!, csrfToken(request, reply), token, signing, WEBHOOK_SECRET_OVERLAP_MS / 3_600_000));
  });

  app.post('/tokens/:id/webhook-secret', { preHandler: requireCsrfForm }, async (request, reply) => {
    const token = await ownToken(request);
    if (!token || token.revokedAt) return reply.redirect('/dashboard/tokens', 303);
    const endEarlier = formField(request, 'end_earlier') === 'true';
    const secret = await app.webhookSecrets.rotate(token.id, { endEarlier });
    if (!secret) return reply.redirect('/dashboard/tokens', 303);
    // The secret is in the answer only: not in the log, not in a redirect's URL.
    request.log.info({ userTokenId: token.id, endEarlier }, 'dashboard: webhook signing secret made');
    const replaced = (await app.store.findSigningGenerations(token.id, new Date().toISOString())).slice(1);
    return render(request, reply, { signingSecret: { name: token.name, secret, replacedSignUntil: replaced[0]?.signsUntil ?? null } });
  });
};

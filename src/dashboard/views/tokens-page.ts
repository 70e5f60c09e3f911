import type { DashboardSession, UserToken } from '../../store/store.js';
import type { SigningGeneration } from '../../store/webhook-records.js';
import { html, type SafeHtml } from '../html.js';
import { csrfField, renderPage } from './layout.js';

/** active, revoked or expired, as the CLI says it. */
export function tokenStatus(token: UserToken, now: string): 'active' | 'revoked' | 'expired' {
  if (token.revokedAt) return 'revoked';
  if (token.expiresAt && token.expiresAt <= now) return 'expired';
  return 'active';
}

/** A time as `2026-03-07 14:05 UTC` inside a <time> element; a dash for none. */
export function when(iso: string | null, dateOnly = false): SafeHtml {
  if (!iso) return html`<span class="muted">—</span>`;
  const text = dateOnly ? iso.slice(0, 10) : `${iso.slice(0, 10)} ${iso.slice(11, 16)} UTC`;
  return html`<time datetime="${iso}" title="${iso}">${text}</time>`;
}

export interface CreatedTokenView {
  name: string;
  tokenId: string;
  /** The curl command that exchanges it, with this server's address. */
  exchangeCommand: string;
}

/** A webhook signing secret just made, shown in the answer to its form and never again. */
export interface SigningSecretView {
  name: string;
  secret: string;
  /** Until when the secrets it replaced go on signing beside it; null when none does. */
  replacedSignUntil: string | null;
}

export interface TokensPageOptions {
  session: DashboardSession;
  csrf: string;
  tokens: UserToken[];
  /** Removals (succeeded) per user token id over the last 30 days. */
  removals: Map<string, number>;
  now: string;
  created?: CreatedTokenView;
  signingSecret?: SigningSecretView;
  notice?: string;
  error?: string;
  /** What the create form held when it was refused. */
  form?: { name: string; expires: string };
}

function createdCard(created: CreatedTokenView): SafeHtml {
  return html`<section class="card secret" aria-labelledby="created-title">
  <h2 id="created-title">Token ID of “${created.name}”</h2>
  <p><strong>Copy it now: it is shown only this once.</strong> Cutout keeps only its hash; if it is lost, revoke the token and create another.</p>
  <div class="copyline"><pre id="new-token-id" tabindex="0" aria-label="Token ID">${created.tokenId}</pre>
    <button class="button" type="button" data-copy="new-token-id" aria-describedby="copied-token">Copy</button></div>
  <span class="visually-hidden" id="copied-token" role="status" aria-live="polite"></span>
  <p>Exchange it for a managed token, which the background endpoints take in <code>Authorization</code>:</p>
  <div class="copyline"><pre id="exchange-command" tabindex="0" aria-label="curl command">${created.exchangeCommand}</pre>
    <button class="button secondary" type="button" data-copy="exchange-command" aria-describedby="copied-command">Copy</button></div>
  <span class="visually-hidden" id="copied-command" role="status" aria-live="polite"></span>
</section>`;
}

function signingSecretCard(made: SigningSecretView): SafeHtml {
  return html`<section class="card secret" aria-labelledby="signing-title">
  <h2 id="signing-title">Webhook signing secret of “${made.name}”</h2>
  <p><strong>Copy it now: it is shown only this once.</strong> Cutout does not store it; if it is lost, make a new one. The webhooks of this token's jobs are signed with it from now on${
    made.replacedSignUntil ? html`, and with the secret it replaced too until ${when(made.replacedSignUntil)}: put the new one in your receiver before then` : html`, and with no earlier one`
  }.</p>
  <div class="copyline"><pre id="new-signing-secret" tabindex="0" aria-label="Webhook signing secret">${made.secret}</pre>
    <button class="button" type="button" data-copy="new-signing-secret" aria-describedby="copied-secret">Copy</button></div>
  <span class="visually-hidden" id="copied-secret" role="status" aria-live="polite"></span>
  <p>Your receiver checks the Standard Webhooks <code>webhook-signature</code> header with it (docs/jobs.md, “Webhook”; examples/webhooks/).</p>
</section>`;
}

function tokenRow(token: UserToken, removals: number, now: string): SafeHtml {
  const status = tokenStatus(token, now);
  return html`<tr data-token-name="${token.name}">
    <td data-label="Name"><strong>${token.name}</strong></td>
    <td data-label="Prefix"><code>${token.prefix}…</code></td>
    <td data-label="Created">${when(token.createdAt, true)}</td>
    <td data-label="Expires">${when(token.expiresAt, true)}</td>
    <td data-label="Last used">${when(token.lastUsedAt)}</td>
    <td data-label="Removals, 30 days" class="num">${removals}</td>
    <td data-label="Status"><span class="badge ${status}">${status}</span></td>
    <td data-label="">${
      status === 'revoked'
        ? ''
        : html`<a class="button secondary small" href="/dashboard/tokens/${token.id}/webhook-secret" aria-label="Webhook signing secret of ${token.name}">Webhook secret</a>
      <a class="button secondary small" href="/dashboard/tokens/${token.id}/revoke" aria-label="Revoke ${token.name}">Revoke</a>`
    }</td>
  </tr>`;
}

/** The Tokens section: create a user token, see them all, revoke one. */
export function tokensPage(options: TokensPageOptions): string {
  const { session, csrf, tokens, removals, now, created, signingSecret, notice, error, form } = options;
  const newest = [...tokens].reverse();
  const body = html`<div class="page-head"><h1>Tokens</h1>
  <p class="muted">A user token's Token ID is exchanged at <code>POST /api/v1/auth/token</code> for a managed token, which the background endpoints take.</p></div>
  ${created ? createdCard(created) : ''}
  ${signingSecret ? signingSecretCard(signingSecret) : ''}
  ${notice ? html`<div class="notice ok" role="status">${notice}</div>` : ''}
  <section class="card" aria-labelledby="create-title">
    <h2 id="create-title">Create a user token</h2>
    ${error ? html`<div class="notice error" role="alert" id="create-error">${error}</div>` : ''}
    <form method="post" action="/dashboard/tokens"${error ? html` aria-describedby="create-error"` : ''}>
      ${csrfField(csrf)}
      <div class="row">
        <div class="field"><label for="token-name">Name <span class="hint">Where it is used, e.g. “laptop” or “shop backend”.</span></label>
          <input type="text" id="token-name" name="name" required maxlength="100" autocomplete="off" value="${form?.name ?? ''}"></div>
        <div class="field"><label for="token-expires">Expiry date <span class="hint">Optional; it stops working at 00:00 UTC that day.</span></label>
          <input type="date" id="token-expires" name="expires" value="${form?.expires ?? ''}"></div>
        <div><button class="button" type="submit">Create token</button></div>
      </div>
    </form>
  </section>
  <section class="card" aria-labelledby="list-title">
    <h2 id="list-title">Your tokens</h2>
    ${
      tokens.length === 0
        ? html`<p class="empty">No tokens yet. Create one above.</p>`
        : html`<table class="stack"><thead><tr><th scope="col">Name</th><th scope="col">Prefix</th><th scope="col">Created</th><th scope="col">Expires</th><th scope="col">Last used</th><th scope="col" class="num">Removals, 30 days</th><th scope="col">Status</th><th scope="col"><span class="visually-hidden">Actions</span></th></tr></thead>
          <tbody>${newest.map((token) => tokenRow(token, removals.get(token.id) ?? 0, now))}</tbody></table>`
    }
  </section>`;
  return renderPage({ title: 'Tokens', csrf, session, active: 'tokens', body });
}

/** Asks before revoking: what stops working, and a button that does it. */
export function revokePage(session: DashboardSession, csrf: string, token: UserToken): string {
  const body = html`<div class="card narrow">
  <h1>Revoke “${token.name}”?</h1>
  <p>The Token ID <code>${token.prefix}…</code> can no longer be exchanged, and <strong>every managed token already exchanged for it is refused from this moment</strong>. This cannot be undone.</p>
  <form method="post" action="/dashboard/tokens/${token.id}/revoke" class="row">
    ${csrfField(csrf)}
    <button class="button danger" type="submit" autofocus>Revoke token</button>
    <a class="button secondary" href="/dashboard/tokens">Cancel</a>
  </form>
</div>`;
  return renderPage({ title: `Revoke ${token.name}`, csrf, session, active: 'tokens', body });
}

/**
 * Asks before making a token's webhook signing secret: says whether it has one, and that the
 * one replaced goes on signing for the overlap unless the owner ends it at once (it leaked).
 */
export function webhookSecretPage(session: DashboardSession, csrf: string, token: UserToken, signing: readonly SigningGeneration[], overlapHours: number): string {
  const current = signing.length > 0;
  const body = html`<div class="card narrow">
  <h1>Webhook signing secret of “${token.name}”</h1>
  <p>Cutout signs the webhooks of this token's jobs with a secret your receiver checks, and refuses a job with a <code>webhook_url</code> until the token has one. Making one shows it <strong>once</strong>.</p>
  ${
    current
      ? html`<p>This token has a secret${signing.length > 1 ? html` (and ${signing.length - 1} replaced one${signing.length > 2 ? 's' : ''} still signing)` : ''}. A new one replaces it, but <strong>the replaced one goes on signing beside it for ${overlapHours} hours</strong>: every webhook carries its signature too, so your receiver accepts them while you give it the new secret.</p>
  <form method="post" action="/dashboard/tokens/${token.id}/webhook-secret">
    ${csrfField(csrf)}
    <p><label class="check"><input type="checkbox" name="end_earlier" id="end-earlier" value="true"> End the earlier secrets now (one leaked): a receiver that has only an earlier one refuses the next webhooks</label></p>
    <div class="row"><button class="button" type="submit" autofocus>Make a new signing secret</button>
    <a class="button secondary" href="/dashboard/tokens">Cancel</a></div>
  </form>`
      : html`<p>This token has none yet.</p>
  <form method="post" action="/dashboard/tokens/${token.id}/webhook-secret" class="row">
    ${csrfField(csrf)}
    <button class="button" type="submit" autofocus>Make a signing secret</button>
    <a class="button secondary" href="/dashboard/tokens">Cancel</a>
  </form>`
  }
</div>`;
  return renderPage({ title: `Webhook secret of ${token.name}`, csrf, session, active: 'tokens', body });
}

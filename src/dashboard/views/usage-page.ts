import type { DashboardSession, UserToken } from '../../store/store.js';
import { html } from '../html.js';
import { shortDay, sparkline, usageChart } from '../usage-chart.js';
import { errorRate, requestCount, type UsageSummary } from '../usage-summary.js';
import { renderPage } from './layout.js';

const percent = (rate: number | undefined) => (rate === undefined ? '—' : `${(rate * 100).toFixed(rate > 0 && rate < 0.01 ? 2 : 1)} %`);
const number = (n: number) => n.toLocaleString('en-US');

export interface UsagePageOptions {
  session: DashboardSession;
  csrf: string;
  tokens: UserToken[];
  summary: UsageSummary;
}

/** Removals per day over 30 days, in total and per token, and the error rate. */
export function usagePage(options: UsagePageOptions): string {
  const { session, csrf, tokens, summary } = options;
  const { days, daily, total, perToken } = summary;
  const period = `${shortDay(days[0])} – ${shortDay(days.at(-1)!)}`;
  const errors = total.refused + total.failed;
  const used = tokens.filter((token) => perToken.has(token.id));

  const body = html`<div class="page-head"><h1>Usage</h1>
  <p class="muted">Background requests of your tokens over the last 30 days (${period}, UTC).</p></div>
  <div class="stats">
    <div class="stat"><div class="value" id="stat-removals">${number(total.succeeded)}</div><div class="label">removals</div></div>
    <div class="stat"><div class="value" id="stat-error-rate">${percent(errorRate(total))}</div><div class="label">error rate (${number(errors)} of ${number(requestCount(total))} requests)</div></div>
    <div class="stat"><div class="value">${number(Math.round(total.megapixels * 10) / 10)}</div><div class="label">megapixels processed</div></div>
    <div class="stat"><div class="value">${number(total.failed)}</div><div class="label">server-side failures (5xx)</div></div>
  </div>
  <section class="card" aria-labelledby="chart-title">
    <h2 id="chart-title">Removals per day, all tokens</h2>
    ${usageChart(days, daily, `Removals per day from ${period}: ${total.succeeded} in all, ${errors} errors.`)}
    <div class="legend" aria-hidden="true"><span>removals</span><span class="bad">errors (4xx and 5xx)</span></div>
    <details><summary>Show as a table</summary>
      <table><thead><tr><th scope="col">Day</th><th scope="col" class="num">Removals</th><th scope="col" class="num">Refused (4xx)</th><th scope="col" class="num">Failed (5xx)</th><th scope="col" class="num">Megapixels</th></tr></thead>
      <tbody>${days.map(
        (day, i) => html`<tr><td>${day}</td><td class="num">${daily[i].succeeded}</td><td class="num">${daily[i].refused}</td><td class="num">${daily[i].failed}</td><td class="num">${daily[i].megapixels.toFixed(1)}</td></tr>`,
      )}</tbody></table>
    </details>
  </section>
  <section class="card" aria-labelledby="per-token-title">
    <h2 id="per-token-title">Per token</h2>
    ${
      used.length === 0
        ? html`<p class="empty">No background requests in the last 30 days.</p>`
        : html`<table class="stack"><thead><tr><th scope="col">Token</th><th scope="col">Last 30 days</th><th scope="col" class="num">Removals</th><th scope="col" class="num">Error rate</th><th scope="col" class="num">Megapixels</th></tr></thead>
      <tbody>${used.map((token) => {
        const usage = perToken.get(token.id)!;
        return html`<tr><td data-label="Token"><strong>${token.name}</strong> <code class="muted">${token.prefix}…</code></td>
          <td data-label="Last 30 days">${sparkline(usage.daily, `Removals per day of ${token.name}`)}</td>
          <td data-label="Removals" class="num">${number(usage.total.succeeded)}</td>
          <td data-label="Error rate" class="num">${percent(errorRate(usage.total))}</td>
          <td data-label="Megapixels" class="num">${usage.total.megapixels.toFixed(1)}</td></tr>`;
      })}</tbody></table>`
    }
  </section>`;
  return renderPage({ title: 'Usage', csrf, session, active: 'usage', body });
}

import { html, type SafeHtml } from './html.js';
import { requestCount, type UsageCounts } from './usage-summary.js';

const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];

/** `2026-03-07` → `Mar 7`. */
export const shortDay = (day: string) => `${MONTHS[Number(day.slice(5, 7)) - 1]} ${Number(day.slice(8, 10))}`;

/** A round number at or above `max` for the top of the axis: 1, 2, 5, 10, 20, 50, … */
function niceCeiling(max: number): number {
  if (max <= 4) return 4;
  const magnitude = 10 ** Math.floor(Math.log10(max));
  return [1, 2, 2.5, 5, 10].map((f) => f * magnitude).find((v) => v >= max) ?? 10 * magnitude;
}

const plural = (n: number, one: string) => `${n} ${one}${n === 1 ? '' : 's'}`;

/**
 * Removals per day as a server-rendered SVG bar chart: succeeded removals, with the
 * requests that failed stacked on top in another colour. Each bar has a tooltip; the
 * chart's label says what it shows, and the page gives the same numbers as a table.
 */
export function usageChart(days: string[], daily: UsageCounts[], label: string): SafeHtml {
  const width = 720;
  const height = 220;
  const left = 36;
  const right = 24;
  const bottom = 24;
  const top = 8;
  const plotHeight = height - top - bottom;
  const step = (width - left - right) / days.length;
  const barWidth = Math.max(2, step * 0.7);
  const ceiling = niceCeiling(Math.max(...daily.map(requestCount), 0));
  const y = (value: number) => top + plotHeight - (value / ceiling) * plotHeight;
  const ticks = [0, ceiling / 2, ceiling];

  const grid = ticks.map(
    (tick) => html`<line class="grid" x1="${left}" x2="${width - right}" y1="${y(tick)}" y2="${y(tick)}"/><text x="${left - 6}" y="${y(tick) + 4}" text-anchor="end">${Number.isInteger(tick) ? tick : tick.toFixed(1)}</text>`,
  );
  const bars = days.map((day, i) => {
    const counts = daily[i];
    const errors = counts.refused + counts.failed;
    const x = left + i * step + (step - barWidth) / 2;
    const okTop = y(counts.succeeded);
    const badTop = y(counts.succeeded + errors);
    return html`<g><title>${shortDay(day)}: ${plural(counts.succeeded, 'removal')}${errors ? `, ${plural(errors, 'error')}` : ''}</title>
      <rect x="${x.toFixed(1)}" y="${top}" width="${barWidth.toFixed(1)}" height="${plotHeight}" fill="transparent"/>
      ${counts.succeeded ? html`<rect class="bar-ok" x="${x.toFixed(1)}" y="${okTop.toFixed(1)}" width="${barWidth.toFixed(1)}" height="${(y(0) - okTop).toFixed(1)}" rx="2"/>` : ''}
      ${errors ? html`<rect class="bar-bad" x="${x.toFixed(1)}" y="${badTop.toFixed(1)}" width="${barWidth.toFixed(1)}" height="${(okTop - badTop).toFixed(1)}" rx="2"/>` : ''}
    </g>`;
  });
  const labels = days.map((day, i) =>
    i % 5 === 4 || i === days.length - 1 ? html`<text x="${(left + i * step + step / 2).toFixed(1)}" y="${height - 6}" text-anchor="middle">${shortDay(day)}</text>` : '',
  );
  return html`<svg class="chart" viewBox="0 0 ${width} ${height}" role="img" aria-label="${label}">${grid}${bars}${labels}</svg>`;
}

/** A tiny bar chart of one token's daily removals, for a table cell. */
export function sparkline(daily: UsageCounts[], label: string): SafeHtml {
  const width = 120;
  const height = 24;
  const max = Math.max(1, ...daily.map((d) => d.succeeded));
  const step = width / daily.length;
  const bars = daily.map((d, i) => {
    if (!d.succeeded) return '';
    const h = Math.max(1.5, (d.succeeded / max) * height);
    return html`<rect x="${(i * step + 0.5).toFixed(1)}" y="${(height - h).toFixed(1)}" width="${(step - 1).toFixed(1)}" height="${h.toFixed(1)}"/>`;
  });
  return html`<svg class="spark" viewBox="0 0 ${width} ${height}" preserveAspectRatio="none" role="img" aria-label="${label}">${bars}</svg>`;
}

import type { LoadPhaseResult } from './results.js';

/** One line of a panel: points (clients, value) in a colour, solid or dashed. */
interface Series {
  label: string;
  colour: string;
  dashed?: boolean;
  points: { clients: number; value: number }[];
}

interface Panel {
  title: string;
  unit: string;
  series: Series[];
  /** A horizontal reference line. */
  reference?: { label: string; value: number };
}

const CUTOUT = '#1f6feb';
const PEER = '#d9480f';
const WIDTH = 1010;
const HEIGHT = 420;
const PANEL_WIDTH = 400;
const PANEL_HEIGHT = 280;

const escapeXml = (text: string) => text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');

/** The smallest 1, 2, 2.5 or 5 × 10^k at or above `value`. */
function niceCeiling(value: number): number {
  if (!(value > 0)) return 1;
  const power = 10 ** Math.floor(Math.log10(value));
  return [1, 2, 2.5, 5, 10].map((step) => step * power).find((candidate) => candidate >= value) ?? 10 * power;
}

function renderPanel(panel: Panel, clients: number[], left: number, top: number): string {
  const values = [...panel.series.flatMap((s) => s.points.map((p) => p.value)), panel.reference?.value ?? 0].filter(Number.isFinite);
  const yMax = niceCeiling(Math.max(...values) * 1.05);
  const logs = clients.map(Math.log2);
  const xMin = Math.min(...logs);
  const xSpan = Math.max(...logs) - xMin || 1;
  const x = (c: number) => left + ((Math.log2(c) - xMin) / xSpan) * PANEL_WIDTH;
  const y = (v: number) => top + PANEL_HEIGHT - (v / yMax) * PANEL_HEIGHT;
  const parts: string[] = [];
  parts.push(`<text x="${left + PANEL_WIDTH / 2}" y="${top - 14}" text-anchor="middle" font-size="15" font-weight="600">${escapeXml(panel.title)}</text>`);
  for (let i = 0; i <= 5; i++) {
    const v = (yMax * i) / 5;
    parts.push(`<line x1="${left}" x2="${left + PANEL_WIDTH}" y1="${y(v)}" y2="${y(v)}" stroke="#e5e7eb"/>`);
    parts.push(`<text x="${left - 8}" y="${y(v) + 4}" text-anchor="end" font-size="12">${Number(v.toPrecision(3))}</text>`);
  }
  for (const c of clients) {
    parts.push(`<line x1="${x(c)}" x2="${x(c)}" y1="${top + PANEL_HEIGHT}" y2="${top + PANEL_HEIGHT + 5}" stroke="#6b7280"/>`);
    parts.push(`<text x="${x(c)}" y="${top + PANEL_HEIGHT + 20}" text-anchor="middle" font-size="12">${c}</text>`);
  }
  parts.push(`<rect x="${left}" y="${top}" width="${PANEL_WIDTH}" height="${PANEL_HEIGHT}" fill="none" stroke="#6b7280"/>`);
  parts.push(`<text x="${left + PANEL_WIDTH / 2}" y="${top + PANEL_HEIGHT + 40}" text-anchor="middle" font-size="13">concurrent clients</text>`);
  parts.push(`<text transform="translate(${left - 48} ${top + PANEL_HEIGHT / 2}) rotate(-90)" text-anchor="middle" font-size="13">${escapeXml(panel.unit)}</text>`);
  if (panel.reference) {
    const ry = y(panel.reference.value);
    parts.push(`<line x1="${left}" x2="${left + PANEL_WIDTH}" y1="${ry}" y2="${ry}" stroke="#059669" stroke-dasharray="2 4" stroke-width="2"/>`);
    parts.push(`<text x="${left + 6}" y="${ry - 6}" font-size="12" fill="#059669">${escapeXml(panel.reference.label)}</text>`);
  }
  for (const series of panel.series) {
    const points = series.points.filter((p) => Number.isFinite(p.value));
    if (points.length === 0) continue;
    const path = points.map((p, i) => `${i === 0 ? 'M' : 'L'}${x(p.clients).toFixed(1)},${y(p.value).toFixed(1)}`).join(' ');
    parts.push(`<path d="${path}" fill="none" stroke="${series.colour}" stroke-width="2.5"${series.dashed ? ' stroke-dasharray="7 5"' : ''}/>`);
    for (const p of points) parts.push(`<circle cx="${x(p.clients).toFixed(1)}" cy="${y(p.value).toFixed(1)}" r="3.5" fill="${series.colour}"/>`);
  }
  return parts.join('\n');
}

/** What the model alone would sustain: one request per `passes` bare passes. */
function referenceLine(floorMs: number, passes: number): { label: string; value: number } {
  const what = passes === 1 ? 'inference alone' : `(${passes} × inference alone)`;
  return { label: `1 / ${what} (${((passes * floorMs) / 1000).toFixed(2)} s)`, value: 1000 / (passes * floorMs) };
}

/**
 * Latency (p50 solid, p95 dashed) and throughput against concurrent clients, Cutout and the
 * peer, as a self-contained SVG (no scripts, no external fonts or styles).
 *
 * @example await writeFile('bench/results/latest.svg', renderLoadChart({ ... }))
 */
export function renderLoadChart(input: { cutout: LoadPhaseResult[]; peer: LoadPhaseResult[]; imageLabel: string; floorMs: number; subtitle: string; passesPerRequest?: number }): string {
  const clients = [...new Set([...input.cutout, ...input.peer].map((l) => l.clients))].sort((a, b) => a - b);
  const line = (label: string, colour: string, phases: LoadPhaseResult[], value: (l: LoadPhaseResult) => number, dashed = false): Series => ({
    label,
    colour,
    dashed,
    points: phases.map((l) => ({ clients: l.clients, value: value(l) })),
  });
  const latency: Panel = {
    title: `Latency, ${input.imageLabel} JPEG`,
    unit: 'seconds',
    series: [
      line('Cutout p50', CUTOUT, input.cutout, (l) => l.latency.p50 / 1000),
      line('Cutout p95', CUTOUT, input.cutout, (l) => l.latency.p95 / 1000, true),
      line('peer p50', PEER, input.peer, (l) => l.latency.p50 / 1000),
      line('peer p95', PEER, input.peer, (l) => l.latency.p95 / 1000, true),
    ],
  };
  const throughput: Panel = {
    title: `Throughput, ${input.imageLabel} JPEG`,
    unit: 'images per second',
    series: [line('Cutout', CUTOUT, input.cutout, (l) => l.throughput), line('peer', PEER, input.peer, (l) => l.throughput)],
    reference: referenceLine(input.floorMs, input.passesPerRequest ?? 1),
  };
  const legend = [
    { label: 'Cutout (HTTP, base64 endpoint)', colour: CUTOUT },
    ...(input.peer.length ? [{ label: '@imgly/background-removal-node (library calls)', colour: PEER }] : []),
  ];
  const legendParts = legend.map(
    (entry, i) =>
      `<rect x="${90 + i * 330}" y="${HEIGHT - 22}" width="14" height="14" fill="${entry.colour}"/><text x="${110 + i * 330}" y="${HEIGHT - 10}" font-size="13">${escapeXml(entry.label)}</text>`,
  );
  legendParts.push(
    `<line x1="${WIDTH - 190}" x2="${WIDTH - 160}" y1="${HEIGHT - 15}" y2="${HEIGHT - 15}" stroke="#374151" stroke-width="2.5" stroke-dasharray="7 5"/><text x="${WIDTH - 152}" y="${HEIGHT - 10}" font-size="13">p95 (solid: p50)</text>`,
  );
  return [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${WIDTH}" height="${HEIGHT}" viewBox="0 0 ${WIDTH} ${HEIGHT}" font-family="Helvetica, Arial, sans-serif" fill="#111827">`,
    `<rect width="${WIDTH}" height="${HEIGHT}" fill="#ffffff"/>`,
    renderPanel(latency, clients, 80, 50),
    renderPanel(throughput, clients, 80 + PANEL_WIDTH + 110, 50),
    `<text x="10" y="16" font-size="11" fill="#6b7280">${escapeXml(input.subtitle)}</text>`,
    ...legendParts,
    '</svg>',
    '',
  ].join('\n');
}

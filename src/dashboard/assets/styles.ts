/** The dashboard's whole stylesheet, served from `/dashboard/assets/dashboard.css`. */
export const DASHBOARD_CSS = String.raw`
:root {
  --ink: #1d2330; --muted: #5b6475; --line: #dfe3ea; --paper: #ffffff; --wash: #f4f6f9;
  --accent: #3b5bdb; --accent-ink: #ffffff; --accent-soft: #e7ecfd;
  --ok: #2b8a3e; --ok-soft: #e6f4ea; --bad: #c92a2a; --bad-soft: #fdecec; --warn-soft: #fff4db;
  --radius: 10px; --shadow: 0 1px 2px rgb(16 24 40 / 6%), 0 1px 3px rgb(16 24 40 / 10%);
  color-scheme: light;
}
*, *::before, *::after { box-sizing: border-box; }
[hidden] { display: none !important; }
html { -webkit-text-size-adjust: 100%; }
body { margin: 0; font: 16px/1.5 system-ui, -apple-system, "Segoe UI", Roboto, "Noto Sans", "DejaVu Sans", sans-serif; color: var(--ink); background: var(--wash); }
a { color: var(--accent); }
code, .mono { font-family: ui-monospace, "SFMono-Regular", "DejaVu Sans Mono", Menlo, Consolas, monospace; font-size: 0.92em; }
h1 { font-size: 1.6rem; line-height: 1.25; margin: 0 0 0.25rem; }
h2 { font-size: 1.15rem; margin: 0 0 0.75rem; }
p { margin: 0 0 0.75rem; }
.muted { color: var(--muted); }
.skip { position: absolute; left: -999px; top: 0; background: var(--paper); padding: 0.5rem 1rem; z-index: 10; }
.skip:focus { left: 0.5rem; }
.visually-hidden { position: absolute; width: 1px; height: 1px; overflow: hidden; clip-path: inset(50%); white-space: nowrap; }
:focus-visible { outline: 3px solid var(--accent); outline-offset: 2px; }

.topbar { background: var(--paper); border-bottom: 1px solid var(--line); }
.topbar-inner { max-width: 1040px; margin: 0 auto; padding: 0.6rem 1rem; display: flex; align-items: center; gap: 1rem; flex-wrap: wrap; }
.brand { display: flex; align-items: center; gap: 0.5rem; font-weight: 700; font-size: 1.1rem; color: var(--ink); text-decoration: none; }
.brand svg { flex: none; }
.nav { display: flex; gap: 0.25rem; flex-wrap: wrap; margin-right: auto; }
.nav a { padding: 0.4rem 0.75rem; border-radius: 8px; color: var(--muted); text-decoration: none; font-weight: 500; }
.nav a:hover { background: var(--wash); color: var(--ink); }
.nav a[aria-current="page"] { background: var(--accent-soft); color: var(--accent); }
.who { display: flex; align-items: center; gap: 0.5rem; color: var(--muted); font-size: 0.9rem; flex-wrap: wrap; }
.who form { margin: 0; }

main { max-width: 1040px; margin: 0 auto; padding: 1.5rem 1rem 3rem; }
.page-head { margin-bottom: 1.25rem; }
.card { background: var(--paper); border: 1px solid var(--line); border-radius: var(--radius); box-shadow: var(--shadow); padding: 1.25rem; margin-bottom: 1.25rem; }
.narrow { max-width: 28rem; margin: 2rem auto; }

label { display: block; font-weight: 600; margin-bottom: 0.3rem; }
.hint { display: block; font-weight: 400; color: var(--muted); font-size: 0.88rem; }
input[type=text], input[type=email], input[type=password], input[type=date] {
  width: 100%; padding: 0.55rem 0.7rem; border: 1px solid #c5ccd8; border-radius: 8px; font: inherit; background: var(--paper); color: var(--ink);
}
input:focus-visible { outline: 2px solid var(--accent); outline-offset: 1px; border-color: var(--accent); }
.field { margin-bottom: 1rem; }
.row { display: flex; gap: 0.75rem; flex-wrap: wrap; align-items: flex-end; }
.row .field { flex: 1 1 12rem; margin-bottom: 0; }

.button { display: inline-flex; align-items: center; justify-content: center; gap: 0.4rem; padding: 0.55rem 1rem; border-radius: 8px; border: 1px solid transparent;
  font: inherit; font-weight: 600; cursor: pointer; text-decoration: none; background: var(--accent); color: var(--accent-ink); min-height: 2.5rem; }
.button:hover { filter: brightness(0.95); }
.button.secondary { background: var(--paper); color: var(--ink); border-color: #c5ccd8; }
.button.danger { background: var(--bad); }
.button.small { padding: 0.3rem 0.7rem; min-height: 2.1rem; font-size: 0.9rem; }
.button.link { background: none; color: var(--muted); padding: 0.3rem 0.5rem; min-height: 0; font-weight: 500; }
.button[disabled] { opacity: 0.6; cursor: progress; }

.notice { border-radius: 8px; padding: 0.75rem 1rem; margin-bottom: 1rem; border: 1px solid; }
.notice.error { background: var(--bad-soft); border-color: #f3b8b8; color: #8a1c1c; }
.notice.ok { background: var(--ok-soft); border-color: #b7dfc2; color: #1e5f2c; }
.notice.warn { background: var(--warn-soft); border-color: #f1d48f; color: #6b4e00; }

.secret { border: 2px solid var(--accent); background: var(--accent-soft); }
.secret h2 { color: var(--accent); }
.copyline { display: flex; gap: 0.5rem; align-items: stretch; margin-bottom: 0.75rem; }
.copyline pre, .copyline code.block { flex: 1; min-width: 0; margin: 0; padding: 0.6rem 0.75rem; background: var(--paper); border: 1px solid var(--line); border-radius: 8px;
  overflow-x: auto; white-space: pre; font-family: ui-monospace, "DejaVu Sans Mono", Menlo, Consolas, monospace; font-size: 0.88rem; }
.copyline .button { min-width: 6.5rem; }

table { width: 100%; border-collapse: collapse; }
th, td { text-align: left; padding: 0.55rem 0.6rem; border-bottom: 1px solid var(--line); vertical-align: middle; }
th { font-size: 0.8rem; text-transform: uppercase; letter-spacing: 0.04em; color: var(--muted); font-weight: 600; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; }
tr:last-child td { border-bottom: none; }
.badge { display: inline-block; padding: 0.1rem 0.55rem; border-radius: 999px; font-size: 0.8rem; font-weight: 600; }
.badge.active { background: var(--ok-soft); color: var(--ok); }
.badge.revoked { background: var(--bad-soft); color: var(--bad); }
.badge.expired { background: #eceff3; color: var(--muted); }
.empty { text-align: center; color: var(--muted); padding: 1.5rem 0; }

.stats { display: grid; grid-template-columns: repeat(auto-fit, minmax(11rem, 1fr)); gap: 1rem; margin-bottom: 1.25rem; }
.stat { background: var(--paper); border: 1px solid var(--line); border-radius: var(--radius); padding: 1rem; box-shadow: var(--shadow); }
.stat .value { font-size: 1.6rem; font-weight: 700; font-variant-numeric: tabular-nums; }
.stat .label { color: var(--muted); font-size: 0.88rem; }
.chart { width: 100%; height: auto; display: block; }
.chart .bar-ok { fill: var(--accent); }
.chart .bar-bad { fill: #f08c00; }
.chart .grid { stroke: var(--line); stroke-width: 1; }
.chart text { fill: var(--muted); font-size: 11px; font-family: inherit; }
.legend { display: flex; gap: 1rem; font-size: 0.88rem; color: var(--muted); margin-top: 0.5rem; flex-wrap: wrap; }
.legend span::before { content: ""; display: inline-block; width: 0.75rem; height: 0.75rem; border-radius: 3px; margin-right: 0.35rem; vertical-align: -1px; background: var(--accent); }
.legend .bad::before { background: #f08c00; }
.spark { width: 10rem; height: 2rem; display: block; }
.spark rect { fill: var(--accent); }
details summary { cursor: pointer; color: var(--muted); margin-top: 0.75rem; }

.drop { display: flex; flex-direction: column; align-items: center; justify-content: center; gap: 0.5rem; text-align: center; padding: 2rem 1rem;
  border: 2px dashed #b4bdcc; border-radius: var(--radius); background: var(--paper); cursor: pointer; font-weight: 400; }
.drop:hover, .drop.over { border-color: var(--accent); background: var(--accent-soft); }
.drop:focus-within { outline: 3px solid var(--accent); outline-offset: 2px; }
.drop input { position: absolute; width: 1px; height: 1px; opacity: 0; }
.drop strong { font-size: 1.05rem; }
.options { display: flex; flex-wrap: wrap; gap: 0.75rem 1.25rem; align-items: end; border: 1px solid var(--line); border-radius: 8px; padding: 0.75rem 1rem; margin: 1rem 0 0; }
.options legend { font-weight: 600; padding: 0 0.3rem; }
.options label { display: flex; flex-direction: column; gap: 0.25rem; font-size: 0.95rem; }
.options label.check { flex-direction: row; align-items: center; }
.options input[type=number] { width: 8rem; }
.options .hint { flex-basis: 100%; margin: 0; }
.more-options { flex-basis: 100%; }
.more-options summary { cursor: pointer; font-size: 0.95rem; }
.more-options[open] { display: flex; flex-wrap: wrap; gap: 0.75rem 1.25rem; align-items: end; }
.more-options[open] summary { flex-basis: 100%; }
.more-options input[type=text] { width: 10rem; }
.compare { display: grid; grid-template-columns: 1fr 1fr; gap: 1rem; margin-top: 1.25rem; }
.compare figure { margin: 0; }
.compare figcaption { font-weight: 600; margin-bottom: 0.4rem; display: flex; justify-content: space-between; align-items: center; gap: 0.5rem; min-height: 2.1rem; }
.frame { border: 1px solid var(--line); border-radius: 8px; overflow: hidden; background: var(--paper); display: flex; align-items: center; justify-content: center; min-height: 12rem; }
.frame img { display: block; max-width: 100%; max-height: 60vh; }
/* The subject's box: drawn over the "before" image, which its stage fits exactly. Touch draws
   the box rather than scrolling the page, which still scrolls from anywhere else. */
.roi-stage { position: relative; max-width: 100%; line-height: 0; overflow: hidden; cursor: crosshair; touch-action: none; user-select: none; -webkit-user-select: none; }
.roi-stage img { image-orientation: from-image; -webkit-user-drag: none; }
.roi-box { position: absolute; border: 2px dashed #ffffff; outline: 2px solid var(--accent); box-shadow: 0 0 0 100vmax rgb(16 24 40 / 45%); pointer-events: none; }
.roi { margin-top: 0.6rem; }
.roi fieldset { border: 1px solid var(--line); border-radius: 8px; padding: 0.6rem 0.75rem 0.75rem; margin: 0; min-width: 0; }
.roi legend { font-weight: 600; padding: 0 0.3rem; }
.roi .hint { margin: 0 0 0.5rem; }
.roi-fields { display: grid; grid-template-columns: repeat(4, minmax(0, 1fr)); gap: 0.5rem; }
.roi-fields label { font-weight: 500; font-size: 0.9rem; margin: 0; }
.roi-fields input { width: 100%; padding: 0.35rem 0.45rem; border: 1px solid #c5ccd8; border-radius: 6px; font: inherit; font-variant-numeric: tabular-nums; background: var(--paper); color: var(--ink); }
.roi-actions { display: flex; flex-wrap: wrap; gap: 0.5rem; margin-top: 0.6rem; }
.checker { background-color: #fff; background-image: conic-gradient(#e3e7ee 25%, transparent 0 50%, #e3e7ee 0 75%, transparent 0); background-size: 20px 20px; }
.status { min-height: 1.5rem; margin-top: 0.75rem; color: var(--muted); }

/* Batch: the drop zone holds two pickers (a label each, its file input inside and invisible,
   so the label shows the input's focus). */
.batch-drop { cursor: default; }
.pickers { display: flex; flex-wrap: wrap; gap: 0.5rem; justify-content: center; }
.picker { position: relative; margin: 0; }
.picker:focus-within { outline: 3px solid var(--accent); outline-offset: 2px; }
.chosen { display: flex; flex-wrap: wrap; align-items: baseline; gap: 0.25rem 0.75rem; margin-top: 0.75rem; }
.chosen p { margin: 0; overflow-wrap: anywhere; min-width: 0; }
.urls { margin-top: 1rem; }
textarea { display: block; width: 100%; padding: 0.55rem 0.7rem; border: 1px solid #c5ccd8; border-radius: 8px; font: 0.9rem/1.4 ui-monospace, "DejaVu Sans Mono", Menlo, Consolas, monospace;
  background: var(--paper); color: var(--ink); resize: vertical; }
textarea:focus-visible { outline: 2px solid var(--accent); outline-offset: 1px; border-color: var(--accent); }
.batch-form select { max-width: 100%; padding: 0.4rem 0.5rem; border: 1px solid #c5ccd8; border-radius: 8px; font: inherit; font-weight: 400; background: var(--paper); color: var(--ink); }
.submit-line { display: flex; flex-wrap: wrap; align-items: center; gap: 0.75rem; margin-top: 1rem; }
.submit-line progress { flex: 1 1 10rem; }
progress { height: 0.75rem; width: 100%; appearance: none; -webkit-appearance: none; border: none; border-radius: 999px; background: var(--wash); overflow: hidden; }
progress::-webkit-progress-bar { background: #e6e9ef; border-radius: 999px; }
progress::-webkit-progress-value { background: var(--accent); border-radius: 999px; }
progress::-moz-progress-bar { background: var(--accent); border-radius: 999px; }
.jobs { list-style: none; margin: 0; padding: 0; }
.job { border-bottom: 1px solid var(--line); padding: 0.75rem 0; display: grid; gap: 0.4rem; }
.job:last-child { border-bottom: none; }
.job-line { display: flex; flex-wrap: wrap; align-items: center; justify-content: space-between; gap: 0.4rem 0.75rem; }
.job-title { min-width: 0; overflow-wrap: anywhere; }
.job-actions { display: flex; flex-wrap: wrap; gap: 0.5rem; align-items: center; }
.job-actions form { margin: 0; }
.job-counts { color: var(--muted); font-size: 0.9rem; font-variant-numeric: tabular-nums; }
.job-id { color: var(--muted); font-size: 0.78rem; overflow-wrap: anywhere; }
.badge.queued { background: #eceff3; color: var(--muted); }
.badge.running { background: var(--accent-soft); color: var(--accent); }
.badge.done { background: var(--ok-soft); color: var(--ok); }
.badge.cancelled { background: var(--warn-soft); color: #6b4e00; }

@media (max-width: 640px) {
  main { padding: 1rem 0.75rem 2rem; }
  .card { padding: 1rem; }
  .who .email { display: none; }
  .compare { grid-template-columns: 1fr; }
  .roi-fields { grid-template-columns: repeat(2, minmax(0, 1fr)); }
  table.stack thead { position: absolute; left: -9999px; }
  table.stack tr { display: block; border-bottom: 1px solid var(--line); padding: 0.5rem 0; }
  table.stack tr:last-child { border-bottom: none; }
  table.stack td { display: flex; justify-content: space-between; gap: 1rem; border: none; padding: 0.2rem 0; text-align: right; }
  table.stack td::before { content: attr(data-label); font-weight: 600; color: var(--muted); text-align: left; }
  table.stack td.num { text-align: right; }
}
`;

import { answersOf } from './end-to-end.js';
import type { BenchResults, LoadPhaseResult } from './results.js';
import { formatMs, median } from './stats.js';

const MIB = 2 ** 20;
const table = (header: string[], rows: string[][]) =>
  [`| ${header.join(' | ')} |`, `| ${header.map(() => '---').join(' | ')} |`, ...rows.map((r) => `| ${r.join(' | ')} |`)].join('\n');
const mib = (bytes: number | undefined) => (bytes === undefined || !Number.isFinite(bytes) ? '–' : `${(bytes / MIB).toFixed(0)} MiB`);
const cores = (value: number | undefined) => (value === undefined || !Number.isFinite(value) ? '–' : value.toFixed(2));
const s = (ms: number) => (Number.isFinite(ms) ? `${(ms / 1000).toFixed(2)} s` : '–');

function loadTable(phases: LoadPhaseResult[], withServerColumns: boolean): string {
  const withQuality = phases.some((l) => l.quality);
  const header = [...(withQuality ? ['quality'] : []), 'clients', 'requests', 'failed', 'throughput (req/s)', 'p50', 'p95', 'p99'];
  if (withServerColumns) header.push('inference (server, median)', 'bare pass around the level (median)', '/healthz p50 / p99 / max', 'peak RSS');
  else header.push('peak RSS');
  header.push('other processes (cores)');
  const rows = phases.map((l) => {
    const row = [...(withQuality ? [l.quality ?? '–'] : []), String(l.clients), String(l.requests), String(l.failures), l.throughput.toFixed(3), s(l.latency.p50), s(l.latency.p95), s(l.latency.p99)];
    if (withServerColumns) {
      row.push(`${formatMs(l.inferenceMedian ?? Number.NaN)} ms`, l.barePasses?.length ? `${formatMs(median(l.barePasses))} ms` : '–', l.health ? `${formatMs(l.health.p50)} / ${formatMs(l.health.p99)} / ${formatMs(l.health.max)} ms` : '–');
    }
    row.push(mib(l.peakRss ?? l.sampledMaxRss), cores(l.foreignCores));
    return row;
  });
  return table(header, rows);
}

/** The run as Markdown: what docs/benchmarks.md records, printed by `npm run bench`. */
export function renderReport(r: BenchResults): string {
  const out: string[] = [];
  const m = r.machine;
  out.push(`## Run`, '');
  out.push(`- date: ${r.startedAt}, ${r.durationS.toFixed(0)} s`);
  out.push(`- command: \`${r.command}\``);
  out.push(`- machine: ${m.cpu}, ${m.cores} cores, ${m.memoryGiB} GiB RAM; Node ${m.node}, Linux ${m.kernel}`);
  out.push(`- load average (1/5/15 min): ${m.loadAverage.join(' / ')} at the start, ${r.loadAverageAfter.join(' / ')} at the end`);
  out.push('- "other processes (cores)": CPU the machine spent on processes other than the benchmark, the server and the peer during that phase, in cores on average (the machine has ' + `${m.cores}); figures taken with more than a few tenths are disturbed`);
  out.push(`- quality: the server's default (CUTOUT_QUALITY) is **${r.qualities.serverDefault}**, asked for without a \`quality\` field; measured: ${r.qualities.measured.join(', ')}`);
  const autoLooks = r.qualities.autoLooks;
  if (autoLooks) out.push(`- \`auto\` on this photo: ${Object.entries(autoLooks).map(([label, looks]) => `${looks} look${looks === 1 ? '' : 's'} at ${label}`).join(', ')} (its times are those of one look or of two; over the fixtures' photos it averages about 1.3)`);
  if (r.precision) out.push(`- model (server and bare passes): **${r.precision.chosen}**, CUTOUT_MODEL_PRECISION=${r.precision.setting}: ${r.precision.reason}`);
  out.push(`- ONNX Runtime threads (server and floor): ${r.threads}; versions: ${Object.entries(r.versions).map(([k, v]) => `${k} ${v}`).join(', ')}`);
  out.push('');

  const gmac = r.model.macs / 1e9;
  out.push(`## Model arithmetic`, '');
  out.push(`- ${r.model.convolutions} Conv + ${r.model.convTransposes} ConvTranspose nodes; one pass at 1024×1024 = **${gmac.toFixed(1)} GMAC = ${(2 * gmac).toFixed(1)} GFLOP** (estimated beforehand: 160 GMAC)`);
  const check = r.model.shapeCheck;
  out.push(
    `- model file: ${r.model.path}${r.model.bytes ? ` (${(r.model.bytes / 1e6).toFixed(1)} MB)` : ''}; shapes measured by ONNX Runtime (every convolution's input and output fetched in one pass); ` +
      `Conv formula on the measured input disagrees with the measured output for ${check.formulaMismatches.length} of them; ` +
      (check.recordedMacs !== undefined
        ? `the shapes recorded in the file (value_info) give ${(check.recordedMacs / 1e9).toFixed(3)} GMAC, ${check.recordedMismatches.length} outputs differing`
        : 'the file records no intermediate shapes to compare'),
  );
  out.push(`- per block (GMAC): ${r.model.byBlock.map((b) => `${b.block} ${(b.macs / 1e9).toFixed(1)}`).join(', ')}`);
  out.push('');

  out.push(`## Inference alone and the machine's GEMM`, '');
  out.push(
    table(
      ['measure', 'median', 'samples (ms)', 'GFLOP/s', 'other processes (cores)'],
      [
        ...(
          [
            ['model pass, before the server starts', r.floor.before],
            ['model pass, beside the single requests', r.floor.interleaved],
            ['model pass, after the load phases', r.floor.after],
          ] as const
        ).map(([label, timed]) => [
          label,
          `${formatMs(timed.median)} ms`,
          timed.samples.map(formatMs).join(', '),
          ((2 * r.model.macs) / 1e9 / (timed.median / 1000)).toFixed(0),
          cores('foreignCores' in timed ? timed.foreignCores : undefined),
        ]),
        ['**inference alone** (all passes)', `**${formatMs(r.floor.median)} ms**`, '', `**${r.floor.gflops.toFixed(0)}**`, ''],
        ...(r.shippedModel
          ? [[`model pass, file as shipped (${r.shippedModel.path})`, `${formatMs(r.shippedModel.median)} ms`, r.shippedModel.samples.map(formatMs).join(', '), ((2 * r.model.macs) / 1e9 / (r.shippedModel.median / 1000)).toFixed(0), '']]
          : []),
        [`MatMul ${r.matmul.n}×${r.matmul.n}·${r.matmul.n}×${r.matmul.n} float32 (${r.matmul.gflop.toFixed(1)} GFLOP)`, `${formatMs(r.matmul.median)} ms`, r.matmul.samples.map(formatMs).join(', '), r.matmul.gflops.toFixed(0), cores(r.matmul.foreignCores)],
      ],
    ),
  );
  out.push('', `The model pass reaches ${((100 * r.floor.gflops) / r.matmul.gflops).toFixed(0)} % of the large-GEMM rate.`, '');

  out.push(`## End to end, one request at a time (medians of ${r.endToEnd[0]?.cutout.samples.length ?? 0} runs)`, '');
  out.push(
    table(
      ['photo', 'quality', 'Cutout e2e', 'model alone (same rounds)', 'e2e ÷ model alone', 'preprocess', 'queue', 'inference', 'decode (beside inference)', 'postprocess', 'refine', 'encode', 'other (HTTP, Base64, JSON)', 'peer', 'peer ÷ Cutout', 'other processes (cores)'],
      r.endToEnd.flatMap((e) =>
        answersOf(e).map((answer) => {
          const st = answer.stages;
          return [
            `${e.image.label}: ${e.image.width}×${e.image.height}, ${(e.image.jpegBytes / 1e6).toFixed(2)} MB`,
            answer === e.cutout ? `${answer.quality} (default)` : answer.quality,
            `${formatMs(answer.median)} ms`,
            `${formatMs(e.floor.median)} ms`,
            answer.ratioToFloor.toFixed(3),
            formatMs(st.preprocess),
            formatMs(st.queue),
            formatMs(st.inference),
            formatMs(st.decode),
            formatMs(st.postprocess),
            formatMs(st.refine),
            formatMs(st.encode),
            formatMs(st.other),
            e.peer ? `${formatMs(e.peer.median)} ms` : 'skipped',
            e.peer ? `${(e.peer.median / answer.median).toFixed(2)} ×` : '–',
            cores(e.foreignCores),
          ];
        }),
      ),
    ),
  );
  out.push(
    '',
    'Stage columns are Server-Timing medians in ms. Decode (full size, on the refine thread, timed there) runs beside the model-sized decode when the model is free and beside inference otherwise; ' +
      'it adds only where it is longer than inference. With `best` the inference column covers both views and their fusion.',
    '',
  );

  const priced = r.endToEnd.filter((e) => e.unrefined);
  if (priced.length) {
    out.push(
      `### What edge refinement costs (same rounds, default answer (${r.qualities.serverDefault}) against \`"refine": false\`)`,
      '',
      table(
        ['photo', 'default (refined)', 'refine: false', 'difference', 'difference ÷ model alone', 'refine stage', 'inference (refined / not)', 'postprocess (refine: false)'],
        priced.map((e) => {
          const raw = e.unrefined!;
          const cost = e.cutout.median - raw.median;
          return [
            e.image.label,
            `${formatMs(e.cutout.median)} ms`,
            `${formatMs(raw.median)} ms`,
            `${formatMs(cost)} ms`,
            `${((100 * cost) / e.floor.median).toFixed(1)} %`,
            formatMs(e.cutout.stages.refine),
            `${formatMs(e.cutout.stages.inference)} / ${formatMs(raw.stages.inference)}`,
            formatMs(raw.stages.postprocess),
          ];
        }),
      ),
      '',
    );
  }

  out.push(`## Under load: ${r.load.image.label} JPEG, closed-loop clients`, '', '### Cutout', '', loadTable(r.load.cutout, true), '');
  const staged = [...r.load.cutout, ...(r.memory ? [r.memory] : [])].filter((l) => l.stages);
  if (staged.length) {
    out.push(
      'Server-Timing medians under load (ms):',
      '',
      table(
        ['clients', 'preprocess', 'queue', 'inference', 'decode', 'postprocess', 'refine', 'encode', 'other'],
        staged.map((l) => {
          const st = l.stages!;
          const label = `${l.clients}${l.quality ? `, ${l.quality}` : ''}${l === r.memory ? ` (${r.memory.image.label})` : ''}`;
          return [label, st.preprocess, st.queue, st.inference, st.decode, st.postprocess, st.refine, st.encode, st.other].map((v, i) => (i === 0 ? String(v) : formatMs(v as number)));
        }),
      ),
      '',
    );
  }
  if (r.load.peer.length) out.push('### Peer (overlapping library calls in one process)', '', loadTable(r.load.peer, false), '');
  if (r.memory) {
    out.push(`### Memory: ${r.memory.clients} concurrent ${r.memory.image.label} requests`, '', loadTable([r.memory], true), '');
  }
  out.push(`Server RSS once ready (model loaded, one warm-up pass): ${mib(r.serverRssReady)}; peak over the whole run (VmHWM): ${mib(r.serverPeakRss)}${r.peerPeakRss ? `; the peer's process: ${mib(r.peerPeakRss)}` : ''}.`, '');
  const baseline = r.fp32Baseline;
  if (baseline) {
    const levels = [baseline.at8, baseline.memory].filter((level) => level !== undefined);
    out.push('### The float32 model on a second server, same run (`--fp32-baseline`)', '', loadTable(levels, true), '', `Its RSS once ready: ${mib(baseline.rssReady)}.`, '');
  }

  out.push(`## Targets`, '');
  out.push(table(['target', 'wanted', 'measured', 'result'], r.targets.map((t) => [t.name, t.target, t.measured, t.pass === undefined ? 'n/a' : t.pass ? 'PASS' : '**FAIL**'])));
  out.push('');
  return out.join('\n');
}

/**
 * Which of the model's two forms runs: float32, or int8 (statically quantized, int8-model.ts).
 * `auto` times one int8 and one float32 convolution of IS-Net's heavy shape on the machine at
 * hand (quantize/probe-models.ts, on a worker thread with the server's thread count) and
 * takes int8 when it is clearly faster: on CPUs with VNNI or AMX it is several times faster,
 * on one without it may gain nothing, and what the flags promise is not what a kernel gets
 * (a hypervisor may hide them, a runtime may not use them), so the probe measures instead of
 * reading /proc/cpuinfo.
 */

import { besideThisModule, startWorkerThread } from '../threads/start-worker-thread.js';
import { disableOnnxRuntimeTelemetry } from './onnx-runtime-telemetry.js';
import type { ProbeResult, ProbeWorkerData } from './segmenter-protocol.js';

/** CUTOUT_MODEL_PRECISION. */
export type PrecisionSetting = 'auto' | 'int8' | 'fp32';
/**
 * `fp16`: the bundled model's float16 weights as shipped (what a GPU runs); `stored`: a model
 * file run as it is, whatever its types (another model on a GPU).
 */
export type Precision = 'int8' | 'fp32' | 'fp16' | 'stored';

/** What runs, and why: the startup log and /readyz say both. */
export interface PrecisionChoice {
  precision: Precision;
  reason: string;
}

/**
 * `auto` takes int8 when the probe's int8 convolution takes at most this fraction of the
 * float32 one. The rest of a pass (Resize, the layout transposes, the float head) does not
 * speed up, so a convolution only somewhat faster would not make the whole pass faster.
 */
export const INT8_PROBE_RATIO = 0.7;

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];

/** The choice `auto` makes from a probe's timings. */
export function decidePrecision(probe: Pick<ProbeResult, 'fp32Ms' | 'int8Ms'>): PrecisionChoice {
  const ratio = median(probe.int8Ms) / median(probe.fp32Ms);
  const measured = `an int8 convolution took ${ratio.toFixed(2)} × the float32 one's time here (median ${median(probe.int8Ms).toFixed(1)} against ${median(probe.fp32Ms).toFixed(1)} ms)`;
  return ratio <= INT8_PROBE_RATIO
    ? { precision: 'int8', reason: `auto: ${measured}` }
    : { precision: 'fp32', reason: `auto: ${measured}, more than the ${INT8_PROBE_RATIO} int8 needs to be worth it` };
}

/**
 * Times the probe on a model thread of its own (segmenter-worker.ts, which reports the
 * timings as its ready message), then ends the thread.
 *
 * @example decidePrecision(await runPrecisionProbe({ threads: 2 }))
 */
export async function runPrecisionProbe(options: { threads: number; runs?: number }): Promise<ProbeResult> {
  const workerData: ProbeWorkerData = { probe: true, threads: options.threads, runs: options.runs ?? 5 };
  disableOnnxRuntimeTelemetry();
  const { worker, ready } = await startWorkerThread<ProbeResult>(besideThisModule(import.meta.url, 'segmenter-worker'), workerData);
  await worker.terminate();
  return ready;
}

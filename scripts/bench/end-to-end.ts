import sharp from 'sharp';
import { requestRemoval, type CutoutTarget, type RequestSample } from './http-load.js';
import type { CpuAccount } from './cpu-account.js';
import type { BenchImage } from './inputs.js';
import type { PeerWorker } from './peer.js';
import type { EndToEndResult, ImageInfo, QualityLatency, StageMedians } from './results.js';
import { median } from './stats.js';
import type { Quality } from '../../src/pipeline/views.js';

export const imageInfo = (image: BenchImage): ImageInfo => ({
  label: image.label,
  width: image.width,
  height: image.height,
  megapixels: Math.round(image.megapixels * 100) / 100,
  jpegBytes: image.bytes.length,
});

/**
 * Checks that an answer is what Cutout promises: a PNG at the input's size with an alpha
 * channel that both keeps and removes pixels. A benchmark of wrong answers measures nothing.
 */
export async function checkCutoutAnswer(body: Buffer, image: BenchImage): Promise<void> {
  const { image_base64: base64 } = JSON.parse(body.toString()) as { image_base64?: string };
  if (!base64) throw new Error(`no image_base64 in the answer for ${image.label}`);
  const png = Buffer.from(base64, 'base64');
  const meta = await sharp(png).metadata();
  if (meta.format !== 'png' || meta.width !== image.width || meta.height !== image.height || meta.channels !== 4) {
    throw new Error(`answer for ${image.label} is ${meta.format} ${meta.width}×${meta.height}×${meta.channels}, expected png ${image.width}×${image.height}×4`);
  }
  const alpha = await sharp(png).extractChannel(3).stats();
  const { min, max } = alpha.channels[0];
  if (min !== 0 || max !== 255) throw new Error(`the alpha of ${image.label} spans ${min}..${max}: no cut-out`);
}

/** Medians of each Server-Timing stage, and of what they leave out, over some answers. */
export function stageMedians(samples: RequestSample[]): StageMedians {
  const timed = samples.filter((s) => s.timings);
  const of = (pick: (s: RequestSample) => number) => median(timed.map(pick));
  return {
    decode: of((s) => s.timings!.decode),
    preprocess: of((s) => s.timings!.preprocess),
    queue: of((s) => s.timings!.queue),
    inference: of((s) => s.timings!.inference),
    postprocess: of((s) => s.timings!.postprocess),
    refine: of((s) => s.timings!.refine),
    compose: of((s) => s.timings!.compose ?? 0),
    encode: of((s) => s.timings!.encode),
    other: of(({ ms, timings: t }) => ms - (t!.preprocess + t!.queue + Math.max(t!.inference, t!.decode) + t!.postprocess + t!.refine + (t!.compose ?? 0) + t!.encode)),
  };
}

/** Every quality one size was measured at, the default answer first. */
export const answersOf = (entry: EndToEndResult): QualityLatency[] => [entry.cutout, ...entry.otherQualities];

export interface EndToEndOptions {
  runs: number;
  /** The qualities to send, each in every round; the first is the server's default (the default answer). */
  qualities: readonly Quality[];
  /** One bare model pass in this process, ms; one is timed per round, beside the requests. */
  floorPass: () => Promise<number>;
  cpu: CpuAccount;
  log: (line: string) => void;
}

/**
 * Each size, one request at a time: a checked warm-up through both, then `runs` rounds of
 * a bare model pass, Cutout at each quality (base64 endpoint, `quality` sent, whole answer
 * read), the default quality with `"refine": false`, and the peer (one removeBackground
 * call), so a disturbance on a shared machine hits them all alike and the ratios compare
 * figures taken minutes, not a quarter of an hour, apart.
 */
export async function measureEndToEnd(images: BenchImage[], server: CutoutTarget, peer: PeerWorker | undefined, options: EndToEndOptions): Promise<EndToEndResult[]> {
  const results: EndToEndResult[] = [];
  const send = async (image: BenchImage, body: Buffer, what: string) => {
    const answer = await requestRemoval(server, body);
    if (!answer.sample.ok) throw new Error(`Cutout (${what}) failed on ${image.label}: ${answer.sample.error}`);
    return answer;
  };
  for (const image of images) {
    const warmMs: string[] = [];
    for (const quality of options.qualities) {
      const warm = await send(image, image.qualityJsonBodies[quality], quality);
      await checkCutoutAnswer(warm.body, image);
      warmMs.push(`${quality} ${warm.sample.ms.toFixed(0)} ms`);
    }
    if (peer) {
      await peer.load(image);
      const peerWarm = await peer.remove(image, true);
      if (!peerWarm.ok) throw new Error(`the peer failed on ${image.label}: ${peerWarm.error}`);
      if (peerWarm.output?.width !== image.width || peerWarm.output.height !== image.height || peerWarm.output.format !== 'png') {
        throw new Error(`the peer's answer for ${image.label} is ${JSON.stringify(peerWarm.output)}`);
      }
    }
    options.log(`  ${image.label} (${image.width}×${image.height}): warm-up Cutout ${warmMs.join(', ')}${peer ? '' : ', peer skipped'}`);

    const answers = options.qualities.map((quality) => ({ quality, samples: [] as RequestSample[] }));
    const unrefined: RequestSample[] = [];
    const peerMs: number[] = [];
    const floorMs: number[] = [];
    const { foreignCores } = await options.cpu.measure(async () => {
      for (let run = 0; run < options.runs; run++) {
        floorMs.push(await options.floorPass());
        for (const answer of answers) answer.samples.push((await send(image, image.qualityJsonBodies[answer.quality], answer.quality)).sample);
        // The body without `quality`: the server's default, which is the first of the qualities.
        unrefined.push((await send(image, image.unrefinedJsonBody, 'refine: false')).sample);
        const timings = answers.map((a) => `${a.quality} ${a.samples.at(-1)!.ms.toFixed(0)} ms`).join(', ');
        let line = `    run ${run + 1}/${options.runs}: model alone ${floorMs.at(-1)!.toFixed(0)} ms, Cutout ${timings} (${options.qualities[0]}, refine: false ${unrefined.at(-1)!.ms.toFixed(0)} ms)`;
        if (peer) {
          const peerSample = await peer.remove(image);
          if (!peerSample.ok) throw new Error(`the peer failed on ${image.label}: ${peerSample.error}`);
          peerMs.push(peerSample.ms);
          line += `, peer ${peerSample.ms.toFixed(0)} ms`;
        }
        options.log(line);
      }
    });
    options.log(`    other processes used ${foreignCores.toFixed(2)} cores meanwhile`);
    const floor = { samples: floorMs, median: median(floorMs) };
    const [cutout, ...otherQualities] = answers.map(({ quality, samples }): QualityLatency => {
      const answerMedian = median(samples.map((s) => s.ms));
      return { quality, samples, median: answerMedian, stages: stageMedians(samples), ratioToFloor: answerMedian / floor.median };
    });
    results.push({
      image: imageInfo(image),
      floor,
      foreignCores,
      cutout,
      otherQualities,
      unrefined: { samples: unrefined, median: median(unrefined.map((s) => s.ms)), stages: stageMedians(unrefined) },
      peer: peer ? { samples: peerMs, median: median(peerMs), ratioToCutout: median(peerMs) / cutout.median } : undefined,
    });
  }
  return results;
}

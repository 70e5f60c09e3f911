/**
 * `npm run webgpu:lavapipe`: the bundled model at full size (1024²) on
 * CUTOUT_EXECUTION_PROVIDER=webgpu, on Mesa's lavapipe (software Vulkan, so on the CPU: about
 * a minute a pass), answering real photos; the tests (test/webgpu.test.ts) prove the provider
 * with IS-Net made to work at 160², this run proves the shipped model at its own size.
 *
 * It starts the real server (src/main.ts through tsx, scripts/lib/server-process.ts) three
 * times, one after the other on one data directory, with the deadline and the start limit
 * raised to suit lavapipe:
 *
 *   - `webgpu`: lavapipe its only Vulkan driver, CUTOUT_MODEL_PRECISION=auto (the bundled
 *     model in float16 as shipped, as on a GPU);
 *   - `cpu-fp32`: the CPU provider with the float32 rewrite a CPU host runs
 *     (CUTOUT_MODEL_PRECISION=fp32; the setting offers int8, fp32 or auto, never float16);
 *   - `cpu-fp16`: the CPU provider on the very file the webgpu server ran (the shipped float16
 *     model, given as CUTOUT_MODEL_PATH; `fp32` then means "run the file as it is", so
 *     /readyz says `fp32` of a float16 file). ONNX Runtime's x64 CPU kernels compute in
 *     float32 between float16 tensors, WebGPU in float16: the nearest the CPU comes.
 *
 * Each removes the background of three labelled photos of ../shared/fixtures
 * (POST /api/v1/background/remove/base64, quality=fast: one pass a photo). The alpha of the
 * webgpu answers is compared with each CPU's (IoU at 128, largest and mean absolute
 * difference) and every answer with the ground-truth mask (IoU at 128, the mask's 128 band
 * left out). It writes bench/results/webgpu-lavapipe-full-size.json and exits 1 when a
 * server does not start, a request fails, or IoU(webgpu, cpu) < 0.99 against either CPU form.
 *
 *   npm run webgpu:lavapipe
 *   npm run webgpu:lavapipe -- --fixtures ../shared/fixtures --out /tmp/run.json --keep
 */
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { loadavg, tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import sharp from 'sharp';
import { TokenService } from '../../src/auth/token-service.js';
import { assembleModel } from '../../src/model/assemble-model.js';
import { vulkanDrivers } from '../../src/model/vulkan-drivers.js';
import { openSqliteStore } from '../../src/store/sqlite-store.js';
import { describeMachine } from '../bench/machine.js';
import { scriptArgs } from '../lib/script-args.js';
import { childEnv, startScriptEnvironment, startServerProcess, type ServerProcess } from '../lib/server-process.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const USAGE = `npm run webgpu:lavapipe [-- options]

  --fixtures DIR   the shared fixtures (default ../shared/fixtures beside the checkout)
  --photos A,B,C   GrabCut image ids (default 106024,181079,227092: penguin, woman, vase)
  --out FILE       the record (default bench/results/webgpu-lavapipe-full-size.json)
  --keep           keep the data directory (server logs) afterwards
  -h, --help`;

/** Deadline of one request and of a start: lavapipe takes about a minute a 1024² pass, a start two. */
const REQUEST_TIMEOUT_MS = 900_000;
const READY_TIMEOUT_MS = 900_000;
const MIN_IOU = 0.99;

interface Photo {
  id: string;
  image: Buffer;
  /** The ground truth: 255 subject, 0 background, 128 not scored. */
  mask: Uint8Array;
  width: number;
  height: number;
  category: string;
}

interface RequestRecord {
  photo: string;
  status: number;
  wallMs: number;
  serverTiming?: string;
  looks?: string;
  error?: string;
}

interface RunRecord {
  name: string;
  env: Record<string, string>;
  startMs?: number;
  readyz?: unknown;
  requests: RequestRecord[];
  error?: string;
  logPath: string;
}

async function main(argv: string[]): Promise<number> {
  const args = scriptArgs(
    {
      args: argv,
      options: {
        fixtures: { type: 'string', default: resolve(ROOT, '../shared/fixtures') },
        photos: { type: 'string', default: '106024,181079,227092' },
        out: { type: 'string', default: join(ROOT, 'bench/results/webgpu-lavapipe-full-size.json') },
        keep: { type: 'boolean', default: false },
        help: { type: 'boolean', short: 'h' },
      },
    },
    USAGE,
  );
  if (typeof args === 'number') return args;
  const { fixtures, out, keep } = args.values;

  const lavapipe = vulkanDrivers().find((driver) => driver.software && /lvp/.test(driver.library));
  if (!lavapipe) {
    console.error('lavapipe is not installed (mesa-vulkan-drivers from bookworm-backports; /usr/share/vulkan/icd.d/lvp_icd.json)');
    return 1;
  }
  const photos = await readPhotos(fixtures!, args.values.photos!.split(','));
  const machine = describeMachine();
  const started = new Date();

  const dataDir = await mkdtemp(join(tmpdir(), 'cutout-lavapipe-'));
  const store = await openSqliteStore(dataDir);
  const { tokenId } = await new TokenService(store, { managedTokenTtl: 3600 }).createUserToken('lavapipe-full-size').finally(() => store.close());
  // The float16 file the webgpu server runs (the server assembles the same one, and reuses this).
  const fp16Model = await assembleModel(dataDir, { form: 'fp16' });

  const common = {
    ...(await startScriptEnvironment(ROOT)),
    CUTOUT_DATA_DIR: dataDir,
    CUTOUT_MODELS: 'isnet',
    CUTOUT_QUALITY: 'fast',
    CUTOUT_REQUEST_TIMEOUT_MS: String(REQUEST_TIMEOUT_MS),
    CUTOUT_RATE_LIMIT: '0',
    LOG_LEVEL: 'info',
    VK_DRIVER_FILES: lavapipe.manifest,
  };
  const runs: { name: string; env: Record<string, string> }[] = [
    { name: 'webgpu', env: { ...common, CUTOUT_EXECUTION_PROVIDER: 'webgpu', CUTOUT_MODEL_PRECISION: 'auto' } },
    { name: 'cpu-fp32', env: { ...common, CUTOUT_EXECUTION_PROVIDER: 'cpu', CUTOUT_MODEL_PRECISION: 'fp32' } },
    { name: 'cpu-fp16', env: { ...common, CUTOUT_EXECUTION_PROVIDER: 'cpu', CUTOUT_MODEL_PRECISION: 'fp32', CUTOUT_MODEL_PATH: fp16Model } },
  ];

  const records: RunRecord[] = [];
  const alphas = new Map<string, Map<string, Uint8Array>>();
  for (const run of runs) {
    const { record, alpha } = await serveAndRemove(run.name, run.env, dataDir, tokenId, photos);
    records.push(record);
    alphas.set(run.name, alpha);
    console.log(`${run.name}: ${record.error ?? `started in ${ms(record.startMs)}, ${record.requests.map((r) => `${r.photo} ${r.status} in ${ms(r.wallMs)}`).join(', ')}`}`);
  }

  // Masks: each answer against the ground truth, webgpu's against each CPU's.
  const masks = photos.map((photo) => {
    const of = (name: string) => alphas.get(name)?.get(photo.id);
    const gpu = of('webgpu');
    return {
      photo: photo.id,
      category: photo.category,
      size: `${photo.width}×${photo.height}`,
      iouVsGroundTruth: Object.fromEntries(runs.map(({ name }) => [name, of(name) ? round(iouVsTruth(of(name)!, photo.mask)) : null])),
      webgpuVs: Object.fromEntries(
        runs
          .filter(({ name }) => name !== 'webgpu')
          .map(({ name }) => {
            const cpu = of(name);
            return [name, gpu && cpu ? compare(gpu, cpu) : null];
          }),
      ),
    };
  });

  const failures: string[] = [];
  for (const record of records) {
    if (record.error) failures.push(`${record.name}: ${record.error.split('\n')[0]}`);
    for (const request of record.requests) if (request.status !== 200) failures.push(`${record.name} ${request.photo}: ${request.status} ${request.error ?? ''}`);
  }
  for (const mask of masks) {
    for (const [name, comparison] of Object.entries(mask.webgpuVs)) {
      if (comparison === null) failures.push(`${mask.photo}: no webgpu/${name} pair to compare`);
      else if (comparison.iou < MIN_IOU) failures.push(`${mask.photo}: IoU(webgpu, ${name}) ${comparison.iou} < ${MIN_IOU}`);
    }
  }

  const mesa = dpkgVersion('mesa-vulkan-drivers');
  const result = {
    what: 'The bundled IS-Net at full size (1024²) on CUTOUT_EXECUTION_PROVIDER=webgpu on Mesa lavapipe (software Vulkan, on the CPU), against the CPU provider, on three labelled GrabCut photos; quality=fast (one pass a photo), refine at its default (true)',
    date: started.toISOString(),
    finished: new Date().toISOString(),
    command: commandLine(),
    machine: { ...machine, loadAverageAtEnd: loadavg().map((l) => Math.round(l * 100) / 100) },
    mesaVulkanDrivers: mesa,
    vulkanDriver: lavapipe.manifest,
    onnxruntimeNode: packageVersion('onnxruntime-node'),
    model: { package: packageVersion('@imgly/background-removal-data'), fp16File: fp16Model.slice(dataDir.length + 1) },
    settings: { CUTOUT_REQUEST_TIMEOUT_MS: REQUEST_TIMEOUT_MS, readyTimeoutMs: READY_TIMEOUT_MS, minIou: MIN_IOU },
    notes: [
      'cpu-fp32: the float32 rewrite a CPU host runs (CUTOUT_MODEL_PRECISION has no float16 setting).',
      'cpu-fp16: the CPU provider on the float16 file webgpu ran, given as CUTOUT_MODEL_PATH with CUTOUT_MODEL_PRECISION=fp32 ("run the file as it is"), so its /readyz says fp32; ONNX Runtime\'s x64 CPU kernels compute in float32 between float16 tensors, WebGPU in float16.',
      'startMs: from spawning the server to GET /readyz answering 200 (model assembly, load, and on webgpu two timed passes); readyz.passMs is the pass timed at start.',
      'Ground truth IoU: alpha thresholded at 128 against the mask\'s 255, its 128 band left out.',
    ],
    // The logs' paths stay out of the record: they name this machine's temporary directory.
    runs: records.map(({ logPath: _log, ...record }) => record),
    masks,
    failures,
    ok: failures.length === 0,
  };
  await mkdir(dirname(out!), { recursive: true });
  await writeFile(out!, `${JSON.stringify(result, null, 2)}\n`);
  if (keep) console.log(`servers' logs kept in ${dataDir}`);
  else await rm(dataDir, { recursive: true, force: true });

  console.log(`\n${machine.cpu}, ${machine.cores} cores; node ${machine.node}; mesa-vulkan-drivers ${mesa}`);
  for (const record of records) {
    const ready = record.readyz as { provider?: string; precision?: string; passMs?: number } | undefined;
    console.log(`${record.name.padEnd(9)} provider ${ready?.provider ?? '?'}, precision ${ready?.precision ?? '?'}, pass at start ${ms(ready?.passMs)}, start ${ms(record.startMs)}; requests ${record.requests.map((r) => ms(r.wallMs)).join(', ')}`);
  }
  for (const mask of masks) {
    const vs = Object.entries(mask.webgpuVs)
      .map(([name, c]) => `vs ${name} IoU ${c?.iou ?? '-'} max|Δ| ${c?.maxAbsDiff ?? '-'}`)
      .join('; ');
    const truth = Object.entries(mask.iouVsGroundTruth)
      .map(([name, value]) => `${name} ${value ?? '-'}`)
      .join(', ');
    console.log(`${mask.photo} (${mask.category}, ${mask.size}): webgpu ${vs}; IoU vs ground truth: ${truth}`);
  }
  console.log(failures.length === 0 ? `\nok; written to ${out}` : `\nFAILED:\n  ${failures.join('\n  ')}\nwritten to ${out}`);
  return failures.length === 0 ? 0 : 1;
}

/** Starts one server, removes the background of every photo one after the other, stops it. */
async function serveAndRemove(name: string, env: Record<string, string>, dataDir: string, tokenId: string, photos: Photo[]): Promise<{ record: RunRecord; alpha: Map<string, Uint8Array> }> {
  const logPath = join(dataDir, `server-${name}.log`);
  const shown = Object.fromEntries(Object.entries(env).filter(([key]) => key !== 'CUTOUT_DATA_DIR' && !key.startsWith('MALLOC_')));
  const record: RunRecord = { name, env: { ...shown, CUTOUT_MODEL_PATH: env.CUTOUT_MODEL_PATH ? env.CUTOUT_MODEL_PATH.replace(dataDir, '<dataDir>') : '' }, requests: [], logPath };
  if (!record.env.CUTOUT_MODEL_PATH) delete record.env.CUTOUT_MODEL_PATH;
  const alpha = new Map<string, Uint8Array>();
  let server: ServerProcess | undefined;
  try {
    const spawned = performance.now();
    server = await startServerProcess({ env: childEnv(env), logPath, readyTimeoutMs: READY_TIMEOUT_MS });
    record.startMs = Math.round(performance.now() - spawned);
    record.readyz = await (await fetch(`${server.origin}/readyz`)).json();
    const exchange = await fetch(`${server.origin}/api/v1/auth/token`, { method: 'POST', headers: { token: tokenId } });
    const token = ((await exchange.json()) as { managed_token?: string }).managed_token;
    if (!token) throw new Error(`token exchange answered ${exchange.status}`);
    for (const photo of photos) {
      const sent = performance.now();
      const answer = await fetch(`${server.origin}/api/v1/background/remove/base64`, {
        method: 'POST',
        headers: { authorization: token, 'content-type': 'application/json', accept: 'image/png' },
        body: JSON.stringify({ image_base64: photo.image.toString('base64'), quality: 'fast' }),
        signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS + 60_000),
      }).catch((error: Error) => error);
      if (answer instanceof Error) {
        record.requests.push({ photo: photo.id, status: 0, wallMs: Math.round(performance.now() - sent), error: answer.message });
        continue;
      }
      const body = Buffer.from(await answer.arrayBuffer());
      const request: RequestRecord = {
        photo: photo.id,
        status: answer.status,
        wallMs: Math.round(performance.now() - sent),
        serverTiming: answer.headers.get('server-timing') ?? undefined,
        looks: answer.headers.get('x-looks') ?? undefined,
      };
      if (answer.status === 200) alpha.set(photo.id, await alphaOf(body, photo));
      else request.error = body.toString().slice(0, 500);
      record.requests.push(request);
    }
  } catch (error) {
    record.error = (error as Error).message.slice(0, 4000);
  } finally {
    await server?.stop();
  }
  return { record, alpha };
}

/** The answer's alpha channel at the photo's size. */
async function alphaOf(png: Buffer, photo: Photo): Promise<Uint8Array> {
  const image = sharp(png).ensureAlpha();
  const { width, height } = await image.metadata();
  const sized = width === photo.width && height === photo.height ? image : image.resize(photo.width, photo.height, { fit: 'fill' });
  return new Uint8Array(await sized.extractChannel(3).raw().toBuffer());
}

function compare(a: Uint8Array, b: Uint8Array): { iou: number; maxAbsDiff: number; meanAbsDiff: number; pixelsOver16: number } {
  let both = 0;
  let either = 0;
  let max = 0;
  let sum = 0;
  let over = 0;
  for (let i = 0; i < a.length; i++) {
    const x = a[i] >= 128;
    const y = b[i] >= 128;
    if (x && y) both++;
    if (x || y) either++;
    const diff = Math.abs(a[i] - b[i]);
    if (diff > max) max = diff;
    if (diff > 16) over++;
    sum += diff;
  }
  return { iou: round(either === 0 ? 1 : both / either), maxAbsDiff: max, meanAbsDiff: round(sum / a.length), pixelsOver16: over };
}

function iouVsTruth(alpha: Uint8Array, truth: Uint8Array): number {
  let both = 0;
  let either = 0;
  for (let i = 0; i < alpha.length; i++) {
    if (truth[i] !== 0 && truth[i] !== 255) continue;
    const x = alpha[i] >= 128;
    const y = truth[i] === 255;
    if (x && y) both++;
    if (x || y) either++;
  }
  return either === 0 ? 1 : both / either;
}

async function readPhotos(fixtures: string, ids: string[]): Promise<Photo[]> {
  const manifest = (await readFile(join(fixtures, 'manifest.csv'), 'utf8')).split('\n');
  return Promise.all(
    ids.map(async (id) => {
      const row = manifest.find((line) => line.includes(`labelled/grabcut/images/${id}.jpg`));
      if (!row) throw new Error(`${id} is not in ${fixtures}/manifest.csv`);
      const image = await readFile(join(fixtures, `labelled/grabcut/images/${id}.jpg`));
      const maskFile = join(fixtures, `labelled/grabcut/masks/${id}.png`);
      if (!existsSync(maskFile)) throw new Error(`no ground truth ${maskFile}`);
      const { data, info } = await sharp(maskFile).extractChannel(0).raw().toBuffer({ resolveWithObject: true });
      const meta = await sharp(image).metadata();
      if (info.width !== meta.width || info.height !== meta.height) throw new Error(`${id}: the mask is ${info.width}×${info.height}, the photo ${meta.width}×${meta.height}`);
      const category = csvFields(row)[8] ?? '';
      return { id, image, mask: new Uint8Array(data), width: info.width, height: info.height, category };
    }),
  );
}

/** One manifest line's fields (quoted fields may hold commas). */
function csvFields(line: string): string[] {
  return [...line.matchAll(/(?:^|,)(?:"([^"]*)"|([^,]*))/g)].map((match) => match[1] ?? match[2] ?? '');
}

function dpkgVersion(name: string): string {
  try {
    return execFileSync('dpkg-query', ['-W', '-f', '${Version}', name], { encoding: 'utf8' }).trim();
  } catch {
    return 'unknown';
  }
}

function packageVersion(name: string): string {
  try {
    return (JSON.parse(readFileSync(join(ROOT, 'node_modules', name, 'package.json'), 'utf8')) as { version: string }).version;
  } catch {
    return 'unknown';
  }
}

function commandLine(): string {
  const extra = process.argv.slice(2).join(' ');
  return process.env.npm_lifecycle_event === 'webgpu:lavapipe' ? `npm run webgpu:lavapipe${extra ? ` -- ${extra}` : ''}` : `tsx scripts/gpu-check/lavapipe-full-size.ts ${extra}`.trim();
}

const round = (value: number) => Math.round(value * 10_000) / 10_000;
const ms = (value: number | undefined) => (value === undefined ? '?' : `${(value / 1000).toFixed(1)} s`);

process.exitCode = await main(process.argv.slice(2));

import { availableParallelism } from 'node:os';
import Type, { type Static, type TSchema } from 'typebox';
import Value from 'typebox/value';
import { MODEL_NAME } from './model/model-presets.js';
import { gpuHint } from './model/vulkan-drivers.js';
import { modelThreads, threadDefaults } from './threads/thread-defaults.cjs';

const MB = 1024 * 1024;

/**
 * This host's thread defaults, from its cores. The model's sessions and threads have no
 * default in the schema: loadConfig chooses them with the provider (modelThreads).
 */
const HOST_THREADS = threadDefaults(availableParallelism());

/**
 * Cutout's whole configuration: one schema, each field with the environment variable it is
 * read from (`env`), its default and a description. docs/configuration.md's table is
 * written from the same list.
 */
export const ConfigSchema = Type.Object({
  port: Type.Integer({ env: 'PORT', default: 8080, minimum: 0, maximum: 65535, description: 'TCP port to listen on.' }),
  host: Type.String({ env: 'HOST', default: '127.0.0.1', minLength: 1, description: 'Address to listen on; 0.0.0.0 for every interface.' }),
  databaseUrl: Type.Optional(
    Type.String({
      env: 'DATABASE_URL',
      pattern: '^postgres(ql)?://',
      description: 'PostgreSQL URL (postgres://…). Unset: embedded SQLite in the data directory.',
    }),
  ),
  dataDir: Type.String({ env: 'CUTOUT_DATA_DIR', default: './data', minLength: 1, description: 'Directory for the SQLite database and the assembled model.' }),
  modelPath: Type.Optional(
    Type.String({ env: 'CUTOUT_MODEL_PATH', minLength: 1, description: 'Another ONNX model of the IS-Net family to serve as `isnet` instead of the bundled one.' }),
  ),
  models: Type.Array(Type.String({ pattern: MODEL_NAME.source }), {
    env: 'CUTOUT_MODELS',
    default: ['isnet'],
    minItems: 1,
    uniqueItems: true,
    description:
      'Comma-separated models to load and warm at start, the first the default; a request picks another with its `model` option. `isnet` is the bundled one; any other is a preset or custom model installed with `npx cutout models add` (docs/models.md).',
  }),
  executionProvider: Type.Union([Type.Literal('auto'), Type.Literal('cpu'), Type.Literal('webgpu'), Type.Literal('cuda'), Type.Literal('tensorrt'), Type.Literal('dml'), Type.Literal('coreml')], {
    env: 'CUTOUT_EXECUTION_PROVIDER',
    default: 'auto',
    description:
      'Where ONNX Runtime runs the models. `auto`: on the CPU, unless the host has a GPU for WebGPU (a Vulkan driver that is not a software one and a GPU device; a look at a few files) and a pass there, timed at start, beats the CPU\'s. `cpu`; `webgpu`: any GPU through Vulkan, bundled with onnxruntime-node for Linux x64, the bundled model in float16; `cuda`/`tensorrt` (Linux, once their libraries are installed), `dml` (Windows), `coreml` (macOS). A start on one that is not there stops and says what to install; `/readyz` says where each model runs and why (docs/models.md, "GPU").',
  }),
  modelPrecision: Type.Union([Type.Literal('auto'), Type.Literal('int8'), Type.Literal('fp32')], {
    env: 'CUTOUT_MODEL_PRECISION',
    default: 'auto',
    description:
      'Which form of the model runs: `int8` (statically quantized, built at first start from the float32 model and a calibration file), `fp32`, or `auto`: int8 where a short probe at start finds int8 convolutions clearly faster on this CPU (those with VNNI or AMX), else fp32. The startup log and `/readyz` say which and why (docs/models.md, "Precision: int8 or float32").',
  }),
  managedTokenTtl: Type.Integer({
    env: 'CUTOUT_MANAGED_TOKEN_TTL',
    default: 3600,
    minimum: 1,
    maximum: 30 * 24 * 3600,
    description: 'Lifetime of a managed token, in seconds.',
  }),
  urlAllowPrivate: Type.Boolean({
    env: 'CUTOUT_URL_ALLOW_PRIVATE',
    default: false,
    description: 'Let the URL endpoint fetch loopback and private addresses (local development and tests only).',
  }),
  urlAllowHosts: Type.Array(Type.String(), {
    env: 'CUTOUT_URL_ALLOW_HOSTS',
    default: [],
    description: 'Comma-separated host names the URL endpoint may fetch (`*.example.com` for a domain); empty: any public host.',
  }),
  urlDenyHosts: Type.Array(Type.String(), {
    env: 'CUTOUT_URL_DENY_HOSTS',
    default: [],
    description: 'Comma-separated host names the URL endpoint must never fetch; checked before the allowlist.',
  }),
  urlTimeoutMs: Type.Integer({ env: 'CUTOUT_URL_TIMEOUT_MS', default: 15_000, minimum: 100, description: 'Deadline for fetching an image URL, body included, in ms.' }),
  urlMaxRedirects: Type.Integer({ env: 'CUTOUT_URL_MAX_REDIRECTS', default: 3, minimum: 0, maximum: 20, description: 'Redirects the URL fetch follows.' }),
  maxImageBytes: Type.Integer({
    env: 'CUTOUT_MAX_IMAGE_BYTES',
    default: 25 * MB,
    minimum: 1024,
    description: 'Largest image accepted, in bytes (a Base64 JSON body may be 4/3 of this plus a little).',
  }),
  maxPixels: Type.Integer({
    env: 'CUTOUT_MAX_PIXELS',
    default: 50_000_000,
    minimum: 1,
    description: 'Largest image accepted, in pixels (width × height), refused from the header before decoding.',
  }),
  refine: Type.Boolean({
    env: 'CUTOUT_REFINE',
    default: true,
    description:
      'Refine the model\'s mask at full size along the photo\'s edges and clean the old background\'s colour out of semi-transparent pixels (docs/quality.md); a request\'s `refine` field overrides it.',
  }),
  quality: Type.Union([Type.Literal('auto'), Type.Literal('best'), Type.Literal('fast')], {
    env: 'CUTOUT_QUALITY',
    default: 'auto',
    description:
      'How the model looks at a photo when a request does not say (its `quality` field): `auto` runs the photo once, and its mirror image too only when that first look is doubtful, fusing the two masks as `best` does; `best` always runs the photo and its mirror image and fuses the two masks, a steadier cut for about twice the model\'s time; `fast` runs the photo once (docs/quality.md).',
  }),
  pngCompression: Type.Union([Type.Literal('fast'), Type.Literal('small')], {
    env: 'CUTOUT_PNG_COMPRESSION',
    default: 'fast',
    description:
      'How hard the answers\' PNGs are compressed: `fast` (fdeflate) or `small` (zlib\'s default level), which makes a 10-megapixel cut-out about a quarter smaller for six times the encode time (docs/benchmarks.md); choose `small` when bandwidth costs more than CPU.',
  }),
  inferenceThreads: Type.Integer({
    env: 'CUTOUT_INFERENCE_THREADS',
    minimum: 1,
    description:
      'Threads ONNX Runtime uses inside one model run. Default: the cores shared out among the sessions (CUTOUT_INFERENCE_CONCURRENCY, given or default), ⌊cores / sessions⌋: 2 on 2 cores and on 16, 8 on 64; every core where the model may run on a GPU.',
  }),
  inferenceConcurrency: Type.Integer({
    env: 'CUTOUT_INFERENCE_CONCURRENCY',
    minimum: 1,
    maximum: 64,
    description:
      'Model runs in flight at once, each in a session of its own; the rest wait in the queue. Default: half the cores, from 1 up to 8 (1 on 2 cores); 1 where the model may run on a GPU, which runs one pass at a time: a GPU provider named, or `auto` on a host with a hardware Vulkan driver and a GPU device (`cpu` keeps the CPU\'s default). Each session keeps its own memory arena.',
  }),
  inferenceMemoryArena: Type.Boolean({
    env: 'CUTOUT_INFERENCE_MEMORY_ARENA',
    default: true,
    description:
      'Let ONNX Runtime keep a model run\'s memory for the next run: measured here, passes about 17 % faster, for about 450 MB the process keeps between requests (docs/benchmarks.md). `false` gives that memory back after every run.',
  }),
  inferenceMemoryPattern: Type.Boolean({
    env: 'CUTOUT_INFERENCE_MEMORY_PATTERN',
    default: false,
    description:
      'Let ONNX Runtime plan one block for all of a model run\'s intermediate tensors: measured here, with the arena it made passes no faster and the peak about 580 MB higher; without the arena, passes 3–6 % faster and each run\'s peak about 240 MB higher (docs/benchmarks.md).',
  }),
  finishThreads: Type.Integer({
    env: 'CUTOUT_FINISH_THREADS',
    default: HOST_THREADS.finishThreads,
    minimum: 1,
    maximum: 256,
    description:
      'Threads that do the work after the model: the photo\'s full-size decode, the refinement, the answer\'s composition and encode, one image on one thread, each image given to the least busy. Default: half the cores, at least 1 (1 on 2 cores). A thread starts when every started one is busy.',
  }),
  queueMax: Type.Integer({
    env: 'CUTOUT_QUEUE_MAX',
    default: 32,
    minimum: 0,
    description: 'Images that may wait for the model; past this a request gets 503 with Retry-After.',
  }),
  memoryBudget: Type.Integer({
    env: 'CUTOUT_MEMORY_BUDGET',
    default: 768 * MB,
    minimum: 16 * MB,
    description:
      'Bytes of decoded pixels, intermediate images and encoded answers that the removals in flight and waiting for the model may hold together, estimated for each from its header and its options before its photo is decoded; past it a request waits, or gets 503 over_memory_budget with Retry-After at once when its estimate alone is larger (docs/configuration.md, "The memory budget").',
  }),
  rateLimit: Type.Integer({
    env: 'CUTOUT_RATE_LIMIT',
    default: 60,
    minimum: 0,
    description: 'Background removals one user token may request per minute (429 past it); 0 turns the limit off.',
  }),
  jobRetention: Type.Integer({
    env: 'CUTOUT_JOB_RETENTION',
    default: 86_400,
    minimum: 60,
    description: 'How long a finished job and its results are kept, in seconds, counted from when it finished; then they are deleted.',
  }),
  jobMaxOpen: Type.Integer({
    env: 'CUTOUT_JOB_MAX_OPEN',
    default: 10,
    minimum: 1,
    description: 'Unfinished jobs one user token may have at once; one more is refused with 429 `too_many_jobs`.',
  }),
  jobMaxQueuedItems: Type.Integer({
    env: 'CUTOUT_JOB_MAX_QUEUED_ITEMS',
    default: 50_000,
    minimum: 1,
    description: 'Images one user token may have waiting in its unfinished jobs; a job that would pass it is refused with 429 `too_many_jobs`.',
  }),
  jobMaxUploadBytes: Type.Integer({
    env: 'CUTOUT_JOB_MAX_UPLOAD_BYTES',
    default: 2 * 1024 * MB,
    minimum: 1024,
    description: 'Largest upload of one job (`POST /api/v1/jobs/multipart`), in bytes, its zip archives counted inflated; past it the upload is refused with 413 and nothing of it is kept.',
  }),
  webhookKey: Type.Optional(
    Type.String({
      env: 'CUTOUT_WEBHOOK_KEY',
      // A refused value is not echoed in the start-up error.
      secret: true,
      pattern: '^([0-9a-fA-F]{64}|[A-Za-z0-9_-]{43}=?)$',
      description:
        'The key job webhooks\' signing secrets are derived from: 32 bytes as 64 hex digits or 43 base64url characters, the same on every replica; changing it changes every secret. Unset: `webhook.key` in the data directory, made on first use (docs/jobs.md, "Webhook"); never logged.',
    }),
  ),
  webhookKeyPrevious: Type.Optional(
    Type.String({
      env: 'CUTOUT_WEBHOOK_KEY_PREVIOUS',
      secret: true,
      pattern: '^([0-9a-fA-F]{64}|[A-Za-z0-9_-]{43}=?)$',
      description:
        'While the webhook key is being replaced: the key it replaces, in the same form. Every webhook is then signed with the secrets of both keys, so that receivers keep accepting deliveries until each has its new secret; unset it to end the overlap (docs/operations.md, "Rotating secrets"); never logged.',
    }),
  ),
  redisUrl: Type.Optional(
    Type.String({
      env: 'REDIS_URL',
      pattern: '^rediss?://',
      description:
        'Redis URL (redis://…) to share rate-limit counts and sign-in throttling between processes, and to share the jobs\' images between replicas through BullMQ (docs/jobs.md). Unset: counted in each process\'s memory, and jobs run on one node.',
    }),
  ),
  jobQueue: Type.String({
    env: 'CUTOUT_JOB_QUEUE',
    default: 'cutout-job-items',
    pattern: '^[A-Za-z0-9_-]{1,100}$',
    description: 'With REDIS_URL: the BullMQ queue the replicas share the jobs\' images through; deployments that share one Redis need one name each.',
  }),
  jobMinShare: Type.Number({
    env: 'CUTOUT_JOB_MIN_SHARE',
    default: 0.02,
    minimum: 0,
    maximum: 1,
    description:
      "While images of jobs wait, the least share of the model's passes they get, taken as whole passes between requests' (one pass in round(1 / share)); per server. 0: jobs take only the passes requests leave.",
  }),
  jobReconcileMs: Type.Integer({
    env: 'CUTOUT_JOB_RECONCILE_MS',
    default: 30_000,
    minimum: 500,
    description:
      "With REDIS_URL: how often one replica reconciles the shared queue with the database, in ms: it adds again every waiting image of a job that Redis does not have (a Redis restarted empty) and every running one whose replica stopped heartbeating.",
  }),
  jobStalledMs: Type.Integer({
    env: 'CUTOUT_JOB_STALLED_MS',
    default: 30_000,
    minimum: 500,
    description: 'With REDIS_URL: how long a replica holds an image of a job without renewing its lock before another replica takes it over (BullMQ\'s lock duration and stalled check), in ms.',
  }),
  requestTimeoutMs: Type.Integer({
    env: 'CUTOUT_REQUEST_TIMEOUT_MS',
    default: 60_000,
    minimum: 1000,
    description: 'Deadline of one background request, queue included, in ms; past it the answer is 504 and its queued work is dropped.',
  }),
  shutdownGraceMs: Type.Integer({
    env: 'CUTOUT_SHUTDOWN_GRACE_MS',
    default: 30_000,
    minimum: 0,
    description: 'On SIGTERM or SIGINT, how long requests in flight may take to finish before the process exits anyway, in ms.',
  }),
  drainDelayMs: Type.Integer({
    env: 'CUTOUT_DRAIN_DELAY_MS',
    default: 0,
    minimum: 0,
    description:
      'On SIGTERM, how long to keep serving, with /readyz answering 503, before closing the listener, in ms: longer than a load balancer takes to see /readyz fail (docs/deployment.md). 0: close at once.',
  }),
  metrics: Type.Boolean({
    env: 'CUTOUT_METRICS',
    default: true,
    description: 'Serve Prometheus metrics at GET /metrics (docs/deployment.md); false turns them off.',
  }),
  metricsToken: Type.Optional(
    Type.String({
      env: 'CUTOUT_METRICS_TOKEN',
      minLength: 16,
      description: 'If set, GET /metrics asks for it as `Authorization: Bearer <token>`. Unset: anyone who reaches the port may scrape.',
    }),
  ),
  compatApi: Type.Boolean({
    env: 'CUTOUT_COMPAT_API',
    default: true,
    description:
      'Also serve remove.bg\'s API (`POST /v1.0/removebg`, `GET /v1.0/account`) and Photoroom\'s `POST /v1/segment`, keyed by a Token ID in `X-Api-Key` (docs/clients.md, "Coming from remove.bg or Photoroom"); false turns them off.',
  }),
  ownerEmail: Type.Optional(
    Type.String({
      env: 'CUTOUT_OWNER_EMAIL',
      minLength: 3,
      description: 'With CUTOUT_OWNER_PASSWORD: creates this account at start if it does not exist yet, instead of the one-time setup page.',
    }),
  ),
  ownerPassword: Type.Optional(
    Type.String({ env: 'CUTOUT_OWNER_PASSWORD', minLength: 1, description: 'The password of the CUTOUT_OWNER_EMAIL account when it is created (at least 10 characters); never logged.' }),
  ),
  sessionTtl: Type.Integer({
    env: 'CUTOUT_SESSION_TTL',
    default: 43_200,
    minimum: 60,
    maximum: 30 * 24 * 3600,
    description: 'Lifetime of a dashboard sign-in, in seconds.',
  }),
  trustProxy: Type.Boolean({
    env: 'CUTOUT_TRUST_PROXY',
    default: false,
    description: 'Trust X-Forwarded-For and X-Forwarded-Proto from a reverse proxy: for client addresses and for marking the dashboard cookies Secure behind https.',
  }),
  logLevel: Type.Union([Type.Literal('fatal'), Type.Literal('error'), Type.Literal('warn'), Type.Literal('info'), Type.Literal('debug'), Type.Literal('trace'), Type.Literal('silent')], {
    env: 'LOG_LEVEL',
    default: 'info',
    description: 'pino log level.',
  }),
});

/** Cutout's parsed, frozen configuration. */
export type Config = Readonly<Static<typeof ConfigSchema>>;

/** One field of the schema, as docs/configuration.md's table and the parser see it. */
export interface ConfigField {
  key: keyof Config;
  env: string;
  default: unknown;
  description: string;
}

/** The fields of {@link ConfigSchema} in declaration order. */
export function describeConfig(): ConfigField[] {
  return Object.entries(ConfigSchema.properties).map(([key, schema]) => {
    const field = schema as unknown as { env: string; default?: unknown; description: string };
    return { key: key as keyof Config, env: field.env, default: field.default, description: field.description };
  });
}

/** Thrown when an environment variable holds a value the schema refuses. */
export class ConfigError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ConfigError';
  }
}

/**
 * Parses the environment into a frozen {@link Config}; fails with a message naming the
 * variable. Empty variables count as unset.
 *
 * @example const config = loadConfig(process.env)
 */
export function loadConfig(env: NodeJS.ProcessEnv, overrides: Partial<Config> = {}): Config {
  const raw: Record<string, unknown> = {};
  for (const field of describeConfig()) {
    const value = env[field.env];
    if (value === undefined || value.trim() === '') continue;
    const schema = ConfigSchema.properties[field.key] as TSchema & { type?: string };
    raw[field.key] = schema.type === 'array' ? value.split(',').map((s) => s.trim()).filter(Boolean) : value.trim();
  }
  for (const [key, value] of Object.entries(overrides)) if (value !== undefined) raw[key] = value;
  for (const field of describeConfig()) {
    const schema = ConfigSchema.properties[field.key];
    const value = field.key in raw ? Value.Convert(schema, raw[field.key]) : Value.Default(schema, undefined);
    if (value === undefined) continue;
    if (!Value.Check(schema, value)) {
      const reason = Value.Errors(schema, value)[0]?.message ?? 'invalid value';
      const shown = (schema as { secret?: boolean }).secret ? '(the value given)' : JSON.stringify(raw[field.key]);
      throw new ConfigError(`${field.env}=${shown} is not valid: ${reason}. ${field.description}`);
    }
    raw[field.key] = value;
  }
  // Left undefined above when not given: their defaults depend on the provider.
  const model = modelThreads(
    availableParallelism(),
    { provider: raw.executionProvider as string, sessions: raw.inferenceConcurrency as number | undefined, threads: raw.inferenceThreads as number | undefined },
    () => gpuHint(env).hardware,
  );
  raw.inferenceConcurrency = model.sessions;
  raw.inferenceThreads = model.threads;
  return Object.freeze(raw) as Config;
}

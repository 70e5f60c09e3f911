import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';

/** What the gauges read at each scrape: the inference queue's own counts. */
/** The removals' memory budget, as `RemovalService.memory` reads it. */
export interface MemoryCounts {
  readonly reserved: number;
  readonly waiting: number;
}

export interface QueueCounts {
  /** Images waiting for a free model slot. */
  readonly queued: number;
  /** Model runs in progress. */
  readonly running: number;
  /** Model runs done (or failed) since the start. */
  readonly passes: number;
  /** The same, by whom each was for: a request, or an image of a batch job. */
  readonly passesFor: Readonly<Record<'interactive' | 'job', number>>;
}

/** A loaded model as the provider gauges read it (ModelService.loaded). */
export interface ModelRun {
  readonly name: string;
  /** `cpu`, `webgpu`, …; absent for a model loaded elsewhere (tests). */
  readonly provider?: string;
  readonly choice?: { readonly precision: string };
  /** One pass's time measured at start, ms. */
  readonly passMs?: number;
  readonly segmenter: { readonly failure?: Error };
}

/** The two waits of one removal that the histograms take from its stage timings, in ms, and its looks. */
export interface RemovalTimings {
  queue: number;
  inference: number;
  /** The model that cut (CUTOUT_MODELS' name): the inference histogram's label. */
  model: string;
  /**
   * The model's looks at the photo (`RemovedBackground.looks`): 2 counts a second look. Absent
   * is one look.
   */
  looks?: 1 | 2;
}

// Buckets in seconds around what one model pass takes on a CPU (docs/benchmarks.md): a pass
// is a second or two, a wait in the queue a few passes, a request up to its 60 s deadline.
const QUEUE_BUCKETS = [0.005, 0.05, 0.25, 0.5, 1, 2.5, 5, 10, 20, 40, 60];
const INFERENCE_BUCKETS = [0.25, 0.5, 0.75, 1, 1.5, 2, 3, 5, 10];
const REMOVAL_BUCKETS = [0.25, 0.5, 1, 2, 3, 5, 10, 20, 40, 60];

/**
 * Cutout's Prometheus metrics, in a registry of their own (not prom-client's global one):
 * Node's default process metrics, and `cutout_…`: requests by route and outcome code, the
 * queue wait, inference and end-to-end time of removals, the images waiting for the model
 * (the gauge an autoscaler follows), the memory budget held and waited for, the model passes, the second looks, the jobs' images and their webhooks. Labels are route templates,
 * registered error codes and the names of the loaded models only: never a token, an account or a URL.
 *
 * Counting costs a request a counter increment and, for a removal, three histogram
 * observations; the gauges are read only when Prometheus scrapes.
 */
export class CutoutMetrics {
  readonly registry = new Registry();
  readonly #requests: Counter<'method' | 'route' | 'code'>;
  readonly #queueWait: Histogram;
  readonly #inference: Histogram<'model'>;
  readonly #removal: Histogram;
  readonly #secondLooks: Counter;
  readonly #jobItems: Counter<'state' | 'code'>;
  readonly #webhookDeliveries: Counter<'outcome'>;
  readonly #jobRecoveries: Counter<'kind'>;
  #jobItemsQueued: (() => Promise<number>) | undefined;

  /**
   * `memory`: the removals' memory budget (`RemovalService.memory`); `models`: the loaded
   * models (`ModelService.loaded`), for where each runs; both read when Prometheus scrapes.
   */
  constructor(queue: QueueCounts, memory?: () => MemoryCounts, models?: () => readonly ModelRun[]) {
    const registers = [this.registry];
    collectDefaultMetrics({ register: this.registry });
    this.#requests = new Counter({
      name: 'cutout_requests_total',
      help: 'HTTP requests answered, by method, route template and outcome: ok, a registered error code, or http_<status> for a dashboard page.',
      labelNames: ['method', 'route', 'code'],
      registers,
    });
    this.#queueWait = new Histogram({ name: 'cutout_queue_wait_seconds', help: 'Time a removal waited for a free model slot.', buckets: QUEUE_BUCKETS, registers });
    this.#inference = new Histogram({
      name: 'cutout_inference_seconds',
      help: 'Time of the model step of a removal, queue excluded, by model (a name from CUTOUT_MODELS).',
      labelNames: ['model'],
      buckets: INFERENCE_BUCKETS,
      registers,
    });
    this.#removal = new Histogram({
      name: 'cutout_removal_duration_seconds',
      help: 'Time from the arrival of a removal request to the end of its answer, for removals answered 200.',
      buckets: REMOVAL_BUCKETS,
      registers,
    });
    this.#secondLooks = new Counter({
      name: 'cutout_second_looks_total',
      help: 'Removals answered 200 for which the model took a second look (the mirror image): every one with quality=best, the doubtful ones with quality=auto.',
      registers,
    });
    this.#jobItems = new Counter({
      name: 'cutout_job_items_total',
      help: 'Images of jobs that ended, by state: succeeded, or failed with the code the removal endpoints would answer for it. Cancelled ones are not counted.',
      labelNames: ['state', 'code'],
      registers,
    });
    this.#webhookDeliveries = new Counter({
      name: 'cutout_webhook_deliveries_total',
      help: 'Job webhook attempts, by outcome: delivered (a 2xx), retried (another attempt is scheduled), failed (no 2xx within the retry window).',
      labelNames: ['outcome'],
      registers,
    });
    this.#jobRecoveries = new Counter({
      name: 'cutout_job_item_recoveries_total',
      help: "Across replicas, job images the fleet recovered, by kind: stalled (BullMQ's stalled check found a replica that stopped renewing its lock), reconciled_queued and reconciled_running (reconciliation added from the store an image the shared queue did not have). Counted by the replica that saw it.",
      labelNames: ['kind'],
      registers,
    });
    const metrics = this;
    new Gauge({
      name: 'cutout_job_items_queued',
      help: 'Images of jobs waiting to be started: on one node, in its store; across replicas, in the shared BullMQ queue (every replica reports the same number).',
      registers,
      async collect() {
        // A store or Redis away leaves the gauge out of this scrape rather than failing it.
        const queued = await metrics.#jobItemsQueued?.().catch(() => undefined);
        if (queued === undefined) this.reset();
        else this.set(queued);
      },
    });
    new Gauge({
      name: 'cutout_queue_waiting_images',
      help: 'Images waiting for the model now: the signal to scale on.',
      registers,
      collect() {
        this.set(queue.queued);
      },
    });
    new Gauge({
      name: 'cutout_model_running',
      help: 'Model runs in progress now (at most CUTOUT_INFERENCE_CONCURRENCY).',
      registers,
      collect() {
        this.set(queue.running);
      },
    });
    if (memory) {
      new Gauge({
        name: 'cutout_memory_reserved_bytes',
        help: 'Bytes of the memory budget (CUTOUT_MEMORY_BUDGET) the removals in flight hold now, by their estimates.',
        registers,
        collect() {
          this.set(memory().reserved);
        },
      });
      new Gauge({
        name: 'cutout_memory_waiting_images',
        help: 'Images waiting for their memory estimate to fit in the budget now.',
        registers,
        collect() {
          this.set(memory().waiting);
        },
      });
    }
    if (models) {
      const labels = (model: ModelRun) => ({ model: model.name, provider: model.provider ?? 'unknown', precision: model.choice?.precision ?? 'unknown' });
      new Gauge({
        name: 'cutout_model_start_pass_seconds',
        help: 'One model pass as timed at start, by model, execution provider (cpu, webgpu, …) and precision: where each model runs, and how fast it ran there.',
        labelNames: ['model', 'provider', 'precision'],
        registers,
        collect() {
          this.reset();
          for (const model of models()) if (model.passMs !== undefined) this.set(labels(model), model.passMs / 1000);
        },
      });
      new Gauge({
        name: 'cutout_model_up',
        help: 'Whether each loaded model can run (1), or not any more (0: its GPU was lost, or its thread died; /readyz says why), by model and execution provider.',
        labelNames: ['model', 'provider'],
        registers,
        collect() {
          this.reset();
          for (const model of models()) this.set({ model: model.name, provider: model.provider ?? 'unknown' }, model.segmenter.failure ? 0 : 1);
        },
      });
    }
    const counted = { interactive: 0, job: 0 };
    new Counter({
      name: 'cutout_model_passes_total',
      help: 'Model passes run (each image is one pass), by whom each was for: `interactive` (a request waiting for its answer) or `job` (an image of a batch job; CUTOUT_JOB_MIN_SHARE keeps its share).',
      labelNames: ['for'],
      registers,
      collect() {
        for (const kind of ['interactive', 'job'] as const) {
          this.inc({ for: kind }, queue.passesFor[kind] - counted[kind]);
          counted[kind] = queue.passesFor[kind];
        }
      },
    });
  }

  /** Counts one answered request. `route` is the route's template (never the URL), `code` its outcome. */
  countRequest(method: string, route: string, code: string): void {
    this.#requests.inc({ method, route, code });
  }

  /**
   * Observes one removal answered 200: its queue wait and model step (ms), its whole time (s),
   * and its second look if it took one.
   */
  observeRemoval(timings: RemovalTimings, totalSeconds: number): void {
    if (timings.looks === 2) this.#secondLooks.inc();
    this.#queueWait.observe(timings.queue / 1000);
    this.#inference.observe({ model: timings.model }, timings.inference / 1000);
    this.#removal.observe(totalSeconds);
  }

  /** Counts one image of a job that ended; a failed one with its problem code (a registered one). */
  countJobItem(state: 'succeeded' | 'failed', code = ''): void {
    this.#jobItems.inc({ state, code: state === 'failed' ? code : '' });
  }

  /** Counts one job webhook attempt by what followed it. */
  countWebhookDelivery(outcome: 'delivered' | 'retried' | 'failed'): void {
    this.#webhookDeliveries.inc({ outcome });
  }

  /** Counts job images the fleet recovered (`FleetRunner`'s `onRecovery`). */
  countJobRecovery(kind: 'stalled' | 'reconciled_queued' | 'reconciled_running', items: number): void {
    this.#jobRecoveries.inc({ kind }, items);
  }

  /** Where `cutout_job_items_queued` reads its count at each scrape (the jobs' runner). */
  readJobItemsQueued(read: () => Promise<number>): void {
    this.#jobItemsQueued = read;
  }

  /** The Prometheus text exposition of every metric. */
  text(): Promise<string> {
    return this.registry.metrics();
  }

  get contentType(): string {
    return this.registry.contentType;
  }
}

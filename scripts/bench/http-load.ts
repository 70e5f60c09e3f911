import http from 'node:http';
import type { StageTimings } from '../../src/pipeline/remove-background.js';
import { percentile } from './stats.js';

export type { StageTimings };

/** A whole HTTP answer, body read to the end. */
export interface HttpAnswer {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: Buffer;
  /** From the request's start to the body's last byte. */
  ms: number;
}

export interface HttpRequestOptions {
  method?: string;
  headers?: http.OutgoingHttpHeaders;
  body?: Buffer;
  agent?: http.Agent;
  timeoutMs?: number;
}

/**
 * One HTTP request to this machine's loopback; any other host is refused, because the
 * benchmark must never send load anywhere else.
 */
export function httpRequest(url: string, options: HttpRequestOptions = {}): Promise<HttpAnswer> {
  const target = new URL(url);
  if (target.hostname !== '127.0.0.1') throw new Error(`the benchmark only talks to 127.0.0.1, not ${target.hostname}`);
  const started = performance.now();
  return new Promise((resolve, reject) => {
    const request = http.request(
      target,
      {
        method: options.method ?? 'GET',
        agent: options.agent,
        headers: { ...options.headers, ...(options.body ? { 'content-length': options.body.length } : {}) },
        timeout: options.timeoutMs ?? 180_000,
      },
      (response) => {
        const chunks: Buffer[] = [];
        response.on('data', (chunk: Buffer) => chunks.push(chunk));
        response.on('error', reject);
        response.on('end', () => resolve({ status: response.statusCode ?? 0, headers: response.headers, body: Buffer.concat(chunks), ms: performance.now() - started }));
      },
    );
    request.on('timeout', () => request.destroy(new Error(`${options.method ?? 'GET'} ${target.pathname} timed out`)));
    request.on('error', reject);
    request.end(options.body);
  });
}

/** Reads Cutout's `Server-Timing` header (`decode;dur=12.3, preprocess;dur=4.5, …`). */
export function parseServerTiming(header: string | string[] | undefined): StageTimings | undefined {
  if (typeof header !== 'string') return undefined;
  const timings: Record<string, number> = {};
  for (const entry of header.split(',')) {
    const match = /^\s*([\w-]+)\s*;\s*dur=([\d.]+)/.exec(entry);
    if (match) timings[match[1]] = Number(match[2]);
  }
  const stages = ['decode', 'preprocess', 'inference', 'postprocess', 'refine', 'encode', 'queue'] as const;
  return stages.every((stage) => stage in timings) ? (timings as unknown as StageTimings) : undefined;
}

/** What the load generator keeps of one request (to Cutout or to the peer). */
export interface RequestSample {
  ok: boolean;
  ms: number;
  /** Start and end on the bench's performance clock. */
  startedAt: number;
  endedAt: number;
  /** HTTP status, or 0 for a connection error or a peer failure. */
  status: number;
  error?: string;
  timings?: StageTimings;
}

/** A running Cutout server as the load generator needs it. */
export interface CutoutTarget {
  baseUrl: string;
  managedToken: string;
}

/**
 * Sends one image to `POST /api/v1/background/remove/base64` and reads the whole answer.
 * Returns the sample and the body (for the caller to check the first answer's PNG).
 */
export async function requestRemoval(target: CutoutTarget, jsonBody: Buffer, agent?: http.Agent): Promise<{ sample: RequestSample; body: Buffer }> {
  const startedAt = performance.now();
  try {
    const answer = await httpRequest(`${target.baseUrl}/api/v1/background/remove/base64`, {
      method: 'POST',
      headers: { authorization: target.managedToken, 'content-type': 'application/json' },
      body: jsonBody,
      agent,
    });
    const ok = answer.status === 200;
    const error = ok ? undefined : `${answer.status} ${answer.body.subarray(0, 300).toString()}`;
    const sample: RequestSample = { ok, ms: answer.ms, startedAt, endedAt: performance.now(), status: answer.status, error, timings: parseServerTiming(answer.headers['server-timing']) };
    return { sample, body: answer.body };
  } catch (error) {
    const endedAt = performance.now();
    return { sample: { ok: false, ms: endedAt - startedAt, startedAt, endedAt, status: 0, error: String(error) }, body: Buffer.alloc(0) };
  }
}

/** Figures of one closed-loop load phase. */
export interface LoadResult {
  clients: number;
  requests: number;
  failures: number;
  /** From the first request's start to the last answer's end. */
  wallMs: number;
  /** Successful requests per second over the wall time. */
  throughput: number;
  latency: { p50: number; p95: number; p99: number; max: number };
  samples: RequestSample[];
}

export interface ClosedLoopOptions {
  clients: number;
  /** No request is started after this many. */
  maxRequests: number;
  /** No request is started after this long; those in flight finish. */
  maxMs: number;
  send: () => Promise<RequestSample>;
}

/**
 * `clients` virtual clients, each sending its next request as soon as its previous answer
 * has arrived, until either bound is reached.
 */
export async function runClosedLoop(options: ClosedLoopOptions): Promise<LoadResult> {
  const samples: RequestSample[] = [];
  const start = performance.now();
  let issued = 0;
  const client = async () => {
    while (issued < options.maxRequests && performance.now() - start < options.maxMs) {
      issued++;
      samples.push(await options.send());
    }
  };
  await Promise.all(Array.from({ length: options.clients }, client));
  return summariseLoad(options.clients, samples);
}

/** Throughput and latency percentiles of a set of samples. */
export function summariseLoad(clients: number, samples: RequestSample[]): LoadResult {
  const ok = samples.filter((s) => s.ok);
  const first = Math.min(...samples.map((s) => s.startedAt));
  const last = Math.max(...samples.map((s) => s.endedAt));
  const wallMs = last - first;
  const ms = ok.map((s) => s.ms);
  return {
    clients,
    requests: samples.length,
    failures: samples.length - ok.length,
    wallMs,
    throughput: ok.length / (wallMs / 1000),
    latency: { p50: percentile(ms, 50), p95: percentile(ms, 95), p99: percentile(ms, 99), max: percentile(ms, 100) },
    samples,
  };
}

/**
 * Polls `GET /healthz` on its own connection while a load phase runs, one request at a time
 * with a pause between them: how long the event loop keeps a trivial request waiting.
 */
export class HealthProbe {
  readonly #latencies: number[] = [];
  #failures = 0;
  #running = true;
  readonly #done: Promise<void>;
  readonly #agent = new http.Agent({ keepAlive: true, maxSockets: 1 });

  constructor(baseUrl: string, intervalMs = 50) {
    this.#done = (async () => {
      while (this.#running) {
        try {
          const answer = await httpRequest(`${baseUrl}/healthz`, { agent: this.#agent, timeoutMs: 30_000 });
          if (answer.status === 200) this.#latencies.push(answer.ms);
          else this.#failures++;
        } catch {
          this.#failures++;
        }
        await new Promise((resolve) => setTimeout(resolve, intervalMs));
      }
    })();
  }

  /** Stops polling; returns the latencies of the successful probes and the failures. */
  async stop(): Promise<{ latencies: number[]; failures: number }> {
    this.#running = false;
    await this.#done;
    this.#agent.destroy();
    return { latencies: this.#latencies, failures: this.#failures };
  }
}

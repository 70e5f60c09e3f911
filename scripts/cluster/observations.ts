import { readFile } from 'node:fs/promises';
import { Agent } from 'node:http';
import { request } from './http.js';
import type { Replica } from './replica.js';
import { quantiles } from './report.js';

// What the cluster run reads off the replicas and HAProxy to judge a phase.

/** Every request id a replica's log shows coming in (pino's lines of the current and earlier runs). */
export async function receivedRequests(replica: Replica): Promise<Set<string>> {
  const seen = new Set<string>();
  for (const line of (await readFile(replica.logPath, 'utf8')).split('\n')) {
    const reqId = /"reqId":"([^"]+)"/.exec(line)?.[1];
    if (reqId && line.includes('"msg":"incoming request"')) seen.add(reqId);
  }
  return seen;
}

/** The request ids a replica's log shows coming in without completing (pino's lines of the current and earlier runs). */
export async function unfinishedRequests(replica: Replica): Promise<Set<string>> {
  const open = new Set<string>();
  for (const line of (await readFile(replica.logPath, 'utf8')).split('\n')) {
    const reqId = /"reqId":"([^"]+)"/.exec(line)?.[1];
    if (!reqId) continue;
    if (line.includes('"msg":"incoming request"')) open.add(reqId);
    else if (line.includes('"msg":"request completed"')) open.delete(reqId);
  }
  return open;
}

/** GET /healthz alternately straight to a replica and through HAProxy, one kept-alive connection each. */
export async function measureAddedLatency(proxied: string, direct: string): Promise<{ direct: { p50: number; p99: number }; proxied: { p50: number; p99: number } }> {
  const agents = { direct: new Agent({ keepAlive: true, maxSockets: 1 }), proxied: new Agent({ keepAlive: true, maxSockets: 1 }) };
  const samples = { direct: [] as number[], proxied: [] as number[] };
  for (let i = 0; i < 450; i++) {
    for (const which of ['direct', 'proxied'] as const) {
      const started = performance.now();
      await request(which === 'direct' ? direct : proxied, 'GET', '/healthz', { agent: agents[which] });
      if (i >= 50) samples[which].push(performance.now() - started);
    }
  }
  agents.direct.destroy();
  agents.proxied.destroy();
  return { direct: quantiles(samples.direct), proxied: quantiles(samples.proxied) };
}

/** "incoming request" lines of /readyz and /healthz at info in the replicas' logs (HAProxy checks each every second). */
export async function countProbeLogLines(replicas: Replica[]): Promise<number> {
  let count = 0;
  for (const replica of replicas) {
    for (const line of (await readFile(replica.logPath, 'utf8')).split('\n')) {
      if (line.includes('"msg":"incoming request"') && /"url":"\/(readyz|healthz)"/.test(line) && line.includes('"level":30')) count++;
    }
  }
  return count;
}


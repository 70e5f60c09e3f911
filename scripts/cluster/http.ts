import { Agent, request as httpRequest } from 'node:http';

/** One HTTP answer, read whole. */
export interface Answer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: Buffer;
}

/** The body of an answer as JSON, or undefined. */
export function json<T = Record<string, unknown>>(answer: Answer): T | undefined {
  try {
    return JSON.parse(answer.body.toString()) as T;
  } catch {
    return undefined;
  }
}

/** The `code` of a problem+json answer, if it is one. */
export const problemCode = (answer: Answer) => json<{ code?: string }>(answer)?.code;

/**
 * One request; resolves with the whole answer, rejects with the socket error (ECONNRESET,
 * ECONNREFUSED, …) when none came. A new connection unless `agent` keeps one alive.
 */
export function request(
  origin: string,
  method: string,
  path: string,
  options: { headers?: Record<string, string>; body?: string | Buffer; agent?: Agent; timeoutMs?: number } = {},
): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(`${origin}${path}`, { method, headers: options.headers, agent: options.agent ?? false, timeout: options.timeoutMs ?? 120_000 }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) }));
      res.on('error', reject);
    });
    req.on('timeout', () => req.destroy(Object.assign(new Error('client timeout'), { code: 'ETIMEDOUT' })));
    req.on('error', reject);
    req.end(options.body);
  });
}

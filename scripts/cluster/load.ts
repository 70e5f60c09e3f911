import { Agent } from 'node:http';
import { problemCode, type Answer } from './http.js';
import { sleep } from './shell.js';

/** What became of one request of the load. */
export interface Outcome {
  client: string;
  requestId: string;
  /** ms on the run's clock when it was sent and when its answer (or error) came. */
  start: number;
  end: number;
  status?: number;
  /** The problem's registered code, for a problem+json answer. */
  code?: string;
  /** The socket error, when no answer came. */
  error?: string;
}

/** One client of the load: sends its request, again and again, one at a time. */
export interface LoadClient {
  name: string;
  send(agent: Agent, requestId: string): Promise<Answer>;
  /** Pause between an answer and the next request. */
  thinkMs: number;
}

/**
 * A closed loop: each client sends its next request when the previous one is answered (and
 * its think time is over), on a kept-alive connection of its own, as a program calling an
 * API does. After a 503 it waits the answer's Retry-After, capped at a second, as a polite
 * client would; after an error, 200 ms.
 */
export class ClosedLoopLoad {
  readonly outcomes: Outcome[] = [];
  readonly #clients: LoadClient[];
  readonly #clock: () => number;
  #running = false;
  #loops: Promise<void>[] = [];
  #sequence = 0;

  constructor(clients: LoadClient[], clock: () => number) {
    this.#clients = clients;
    this.#clock = clock;
  }

  start(): void {
    this.#running = true;
    this.#loops = this.#clients.map((client) => this.#loop(client));
  }

  /** Stops sending and waits for the requests in flight. */
  async stop(): Promise<void> {
    this.#running = false;
    await Promise.all(this.#loops);
  }

  /** Requests sent and not answered yet. */
  get inFlight(): number {
    return this.#inFlight;
  }

  #inFlight = 0;

  async #loop(client: LoadClient): Promise<void> {
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    try {
      while (this.#running) {
        const requestId = `${client.name}-${++this.#sequence}`;
        const start = this.#clock();
        this.#inFlight++;
        let pause = client.thinkMs;
        try {
          const answer = await client.send(agent, requestId);
          this.outcomes.push({ client: client.name, requestId, start, end: this.#clock(), status: answer.status, code: answer.status === 200 ? undefined : problemCode(answer) });
          if (answer.status === 503) pause = Math.max(pause, Math.min(1000, Number(answer.headers['retry-after'] ?? 1) * 1000));
        } catch (error) {
          this.outcomes.push({ client: client.name, requestId, start, end: this.#clock(), error: (error as NodeJS.ErrnoException).code ?? (error as Error).message });
          pause = Math.max(pause, 200);
        } finally {
          this.#inFlight--;
        }
        if (pause > 0 && this.#running) await sleep(pause);
      }
    } finally {
      agent.destroy();
    }
  }
}

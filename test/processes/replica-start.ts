/**
 * Child process of test/startup-race.test.ts: does what a Cutout server does at start,
 * before it listens, for several installations one after another, each at a given instant
 * (so that several of these children do it at the same moments, as replicas starting
 * together would): opens and migrates the store from the environment, prepares the first
 * account (the owner from CUTOUT_OWNER_EMAIL, or the setup code), and, if asked, assembles
 * the model into a data directory, all at the same instant after the installations.
 *
 * Prints `{ ready: true }` once its modules are loaded, then waits for the file `goFile` to
 * hold the first instant (the test writes it once every child is ready, so none starts late
 * for having loaded slowly). Then prints one JSON line per step, with `beganAt` and
 * `endedAt`, when (Date.now()) the step began and ended: the test checks from these that the
 * replicas really raced.
 *
 * argv[2]: JSON `{ goFile: string, gapMs: number, places: { env: Record<string, string> }[], modelDir?: string }`
 */
import { readFile } from 'node:fs/promises';
import pino from 'pino';
import { loadConfig } from '../../src/config.js';
import { AccountService } from '../../src/dashboard/account-service.js';
import { prepareFirstAccount } from '../../src/dashboard/first-account.js';
import { assembleModel } from '../../src/model/assemble-model.js';
import { openStore } from '../../src/store/open-store.js';

interface Plan {
  goFile: string;
  gapMs: number;
  places: { env: Record<string, string> }[];
  modelDir?: string;
}

const plan = JSON.parse(process.argv[2]) as Plan;
const print = (line: Record<string, unknown>) => process.stdout.write(`${JSON.stringify(line)}\n`);
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
/** Waits for the instant `at`; resolves with the moment it woke. */
const until = async (at: number): Promise<number> => {
  await sleep(Math.max(0, at - Date.now()));
  return Date.now();
};
const log = pino({ level: 'silent' });

print({ ready: true });
let startAt = NaN;
while (Number.isNaN(startAt)) {
  startAt = Number(await readFile(plan.goFile, 'utf8').catch(() => 'NaN'));
  if (Number.isNaN(startAt)) await sleep(5);
}

for (const [place, { env }] of plan.places.entries()) {
  const beganAt = await until(startAt + place * plan.gapMs);
  try {
    const config = loadConfig(env);
    const store = await openStore(config);
    const code = await prepareFirstAccount(config, new AccountService(store, { sessionTtl: 60 }), store, log);
    print({ place, ok: true, setupCode: code.value ?? null, beganAt, endedAt: Date.now() });
    await store.close();
  } catch (error) {
    print({ place, ok: false, error: `${(error as Error).message}: ${String((error as Error).cause ?? '')}`, beganAt, endedAt: Date.now() });
  }
}
// After the stores, at an instant of its own: the assembly takes seconds of CPU, which would
// otherwise put the replicas out of step for the races above.
if (plan.modelDir) {
  const beganAt = await until(startAt + plan.places.length * plan.gapMs);
  try {
    print({ model: await assembleModel(plan.modelDir), beganAt, endedAt: Date.now() });
  } catch (error) {
    print({ model: null, error: (error as Error).message, beganAt, endedAt: Date.now() });
  }
}

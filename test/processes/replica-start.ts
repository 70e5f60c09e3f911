/**
 * Child process of test/startup-race.test.ts: does what a Cutout server does at start,
 * before it listens, for several installations one after another, each at a given instant
 * (so that several of these children do it at the same moments, as replicas starting
 * together would): opens and migrates the store from the environment, prepares the first
 * account (the owner from CUTOUT_OWNER_EMAIL, or the setup code), and, if asked, assembles
 * the model into a data directory, all at the same instant after the installations. Prints
 * one JSON line per step.
 *
 * argv[2]: JSON `{ startAt: number, gapMs: number, places: { env: Record<string, string> }[], modelDir?: string }`
 */
import pino from 'pino';
import { loadConfig } from '../../src/config.js';
import { AccountService } from '../../src/dashboard/account-service.js';
import { prepareFirstAccount } from '../../src/dashboard/first-account.js';
import { assembleModel } from '../../src/model/assemble-model.js';
import { openStore } from '../../src/store/open-store.js';

interface Plan {
  startAt: number;
  gapMs: number;
  places: { env: Record<string, string> }[];
  modelDir?: string;
}

const plan = JSON.parse(process.argv[2]) as Plan;
const print = (line: Record<string, unknown>) => process.stdout.write(`${JSON.stringify(line)}\n`);
const until = (at: number) => new Promise((resolve) => setTimeout(resolve, Math.max(0, at - Date.now())));
const log = pino({ level: 'silent' });

for (const [place, { env }] of plan.places.entries()) {
  await until(plan.startAt + place * plan.gapMs);
  try {
    const config = loadConfig(env);
    const store = await openStore(config);
    const code = await prepareFirstAccount(config, new AccountService(store, { sessionTtl: 60 }), store, log);
    print({ place, ok: true, setupCode: code.value ?? null });
    await store.close();
  } catch (error) {
    print({ place, ok: false, error: `${(error as Error).message}: ${String((error as Error).cause ?? '')}` });
  }
}
// After the stores, at an instant of its own: the assembly takes seconds of CPU, which would
// otherwise put the replicas out of step for the races above.
if (plan.modelDir) {
  await until(plan.startAt + plan.places.length * plan.gapMs);
  try {
    print({ model: await assembleModel(plan.modelDir) });
  } catch (error) {
    print({ model: null, error: (error as Error).message });
  }
}

import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { describeConfig, loadConfig } from '../src/config.js';
import { ERRORS } from '../src/errors.js';
import { CutoutMetrics } from '../src/metrics/cutout-metrics.js';
import { ModelService } from '../src/model/model-service.js';
import { startTestApp, type TestApp } from './helpers/app.js';
import { fakeSegmenter } from './helpers/fake-segmenter.js';

// The deployment files of deploy/ checked against the code they deploy: what can
// be run here is run (HAProxy's own check, systemd's), the rest is read and compared with
// what Cutout really reads and serves. What cannot be run here (a container engine,
// Kubernetes) is said in docs/deployment.md.

const root = new URL('..', import.meta.url).pathname;
const read = (path: string) => readFileSync(join(root, path), 'utf8');
const defaults = loadConfig({});
const packageJson = JSON.parse(read('package.json')) as { scripts: Record<string, string> };

/** The variables `npm start` sets before node: glibc's, which no config schema can read. */
const startVariables = Object.fromEntries([...packageJson.scripts.start.matchAll(/\b([A-Z_]+)=(\S+)/g)].map((m) => [m[1], m[2]]));
/** Every variable a deployment may set: the config schema's, `npm start`'s, and NODE_ENV. */
const knownVariables = new Set([...describeConfig().map((field) => field.env), ...Object.keys(startVariables), 'NODE_ENV']);

function expectKnownVariables(names: string[], where: string): void {
  expect(names.length).toBeGreaterThan(0);
  for (const name of names) expect(knownVariables.has(name), `${where} sets ${name}, which Cutout does not read`).toBe(true);
}

const haproxyMissing = spawnSync('haproxy', ['-v']).error !== undefined;
if (haproxyMissing) console.error('[cutout tests] HAProxy checks SKIPPED: no haproxy here (apt-get install haproxy; .ci/run does)');
const systemdMissing = spawnSync('systemd-analyze', ['--version']).error !== undefined;
if (systemdMissing) console.error('[cutout tests] systemd unit check SKIPPED: no systemd-analyze here');

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp({}, { model: ModelService.ofSegmenter(fakeSegmenter()) });
});
afterAll(async () => t?.close());

/** The app answers this path as a probe would see it (200 when ready), not 404. */
async function expectProbe(path: string): Promise<void> {
  const answer = await t.app.inject({ method: 'GET', url: path });
  expect(answer.statusCode, `GET ${path}`).toBe(200);
}

describe('deploy/haproxy.cfg', () => {
  const config = read('deploy/haproxy.cfg');
  const backend = config.slice(config.indexOf('backend cutout'), config.indexOf('frontend stats'));

  it.skipIf(haproxyMissing)('is valid for HAProxy (haproxy -c)', () => {
    const check = spawnSync('haproxy', ['-c', '-f', join(root, 'deploy/haproxy.cfg')], { encoding: 'utf8' });
    expect(check.status, check.stdout + check.stderr).toBe(0);
    expect(check.stdout + check.stderr).not.toMatch(/\[WARNING\]/);
  });

  it('balances by least connections, checks /readyz, and retries only refused connections, elsewhere', async () => {
    expect(backend).toMatch(/^\s*balance leastconn$/m);
    expect(backend).toMatch(/^\s*option httpchk GET \/readyz$/m);
    await expectProbe('/readyz');
    expect(backend).toMatch(/^\s*retry-on conn-failure$/m);
    expect(backend).toMatch(/^\s*option redispatch 1$/m);
  });

  it('lets each replica hold what it runs and queues, no more, and queues the rest for a while', () => {
    const maxconn = Number(/default-server .*\bmaxconn (\d+)/.exec(backend)?.[1]);
    expect(maxconn).toBe(defaults.inferenceConcurrency + defaults.queueMax);
    expect(config).toMatch(/^\s*timeout queue \d+s$/m);
    // Cutout's own deadline answer (504 deadline_exceeded) must come before HAProxy's.
    const serverTimeout = Number(/^\s*timeout server (\d+)s$/m.exec(config)?.[1]) * 1000;
    expect(serverTimeout).toBeGreaterThan(defaults.requestTimeoutMs);
  });

  it('answers its own 503 as Cutout would: problem+json with a registered code and Retry-After', () => {
    const line = config.split('\n').find((l) => l.trim().startsWith('http-error status 503'))!;
    expect(line).toMatch(/content-type application\/problem\+json/);
    expect(Number(/hdr retry-after (\d+)/.exec(line)?.[1])).toBeGreaterThan(0);
    const body = JSON.parse(/lf-string '(.*)'$/.exec(line)![1].replaceAll('%ID', 'abc')) as { code: keyof typeof ERRORS; status: number; title: string; type: string };
    expect(ERRORS[body.code]).toMatchObject({ status: 503, title: body.title });
    expect(body).toMatchObject({ status: 503, type: `urn:cutout:error:${body.code}` });
  });

  it('does not serve /metrics to the public side', () => {
    expect(config).toMatch(/http-request deny deny_status 404 if \{ path \/metrics \}/);
  });
});

describe('deploy/cutout.service (systemd)', () => {
  const unit = read('deploy/cutout.service');
  const environment = Object.fromEntries([...unit.matchAll(/^Environment=(\w+)=(.*)$/gm)].map((m) => [m[1], m[2]]));

  it.skipIf(systemdMissing)('is a valid unit (systemd-analyze verify)', () => {
    const dir = mkdtempSync(join(tmpdir(), 'cutout-unit-'));
    // Verify resolves the executable: use this machine's node wherever it is installed.
    writeFileSync(join(dir, 'cutout.service'), unit.replace('/usr/bin/node', process.execPath));
    const verify = spawnSync('systemd-analyze', ['verify', join(dir, 'cutout.service')], { encoding: 'utf8' });
    expect(verify.status, verify.stderr).toBe(0);
    expect(verify.stdout + verify.stderr).toBe('');
  });

  it('sets only variables Cutout reads, the glibc ones as `npm start` does, and runs the compiled main', () => {
    expectKnownVariables(Object.keys(environment), 'cutout.service');
    for (const [name, value] of Object.entries(startVariables)) expect(environment[name]).toBe(value);
    expect(unit).toMatch(/^ExecStart=\/usr\/bin\/node \/opt\/cutout\/dist\/main\.js$/m);
    expect(existsSync(join(root, 'src/main.ts'))).toBe(true);
  });

  it('waits longer than the drain and the grace period before SIGKILL', () => {
    expect(unit).toMatch(/^KillSignal=SIGTERM$/m);
    const stopMs = Number(/^TimeoutStopSec=(\d+)$/m.exec(unit)?.[1]) * 1000;
    expect(stopMs).toBeGreaterThan(Number(environment.CUTOUT_DRAIN_DELAY_MS) + Number(environment.CUTOUT_SHUTDOWN_GRACE_MS));
  });
});

describe('deploy/Dockerfile', () => {
  const dockerfile = read('deploy/Dockerfile');
  const env = Object.fromEntries([...dockerfile.matchAll(/^\s*(?:ENV\s+)?([A-Z_]+)=(\S+?)\s*\\?$/gm)].map((m) => [m[1], m[2]]));

  it('builds in one stage and runs from another, with the model assembled at build time', () => {
    expect(dockerfile.match(/^FROM /gm)?.length).toBeGreaterThanOrEqual(2);
    expect(dockerfile).toMatch(/^COPY --from=build .*model\.onnx/m);
    // The build step imports the compiled assembleModel; it must exist under that name.
    expect(dockerfile).toMatch(/import \{ assembleModel \} from '\.\/dist\/model\/assemble-model\.js'/);
    expect(read('src/model/assemble-model.ts')).toMatch(/export async function assembleModel\(/);
    expect(env.CUTOUT_MODEL_PATH).toBe('/opt/cutout/model.onnx');
    expect(dockerfile).toMatch(/^CMD \["node", "dist\/main\.js"\]$/m);
  });

  it('sets only variables Cutout reads, and the glibc ones as `npm start` does', () => {
    expectKnownVariables(Object.keys(env), 'Dockerfile');
    for (const [name, value] of Object.entries(startVariables)) expect(env[name], name).toBe(value);
  });
});

describe('deploy/kubernetes', () => {
  const dir = join(root, 'deploy/kubernetes');
  type Manifest = { kind: string; metadata: { name: string }; spec: Record<string, any> };
  const manifests: Manifest[] = readdirSync(dir)
    .filter((file) => file.endsWith('.yaml') && file !== 'kustomization.yaml')
    .flatMap((file) =>
      parseAllDocuments(readFileSync(join(dir, file), 'utf8')).map((doc) => {
        expect(doc.errors, file).toEqual([]);
        return doc.toJS() as Manifest;
      }),
    );
  const ofKind = (kind: string) => {
    const found = manifests.filter((m) => m.kind === kind);
    expect(found, kind).toHaveLength(1);
    return found[0];
  };
  const deployment = ofKind('Deployment');
  const pod = deployment.spec.template.spec;
  const container = pod.containers[0];
  const env = Object.fromEntries((container.env as { name: string; value?: string }[]).map((e) => [e.name, e.value]));

  it('parses, and kustomization lists every manifest', () => {
    const kustomization = parseAllDocuments(readFileSync(join(dir, 'kustomization.yaml'), 'utf8'))[0].toJS() as { resources: string[] };
    expect(kustomization.resources.sort()).toEqual(readdirSync(dir).filter((f) => f.endsWith('.yaml') && f !== 'kustomization.yaml').sort());
    expect(manifests.map((m) => m.kind).sort()).toEqual(['Deployment', 'HorizontalPodAutoscaler', 'PodDisruptionBudget', 'Service']);
  });

  it('probes readiness on /readyz and liveness on /healthz, which the app serves', async () => {
    expect(container.readinessProbe.httpGet.path).toBe('/readyz');
    expect(container.livenessProbe.httpGet.path).toBe('/healthz');
    for (const probe of [container.readinessProbe, container.livenessProbe, container.startupProbe]) {
      expect(container.ports.map((p: { name: string }) => p.name)).toContain(probe.httpGet.port);
      await expectProbe(probe.httpGet.path);
    }
    expect(container.ports[0].containerPort).toBe(Number(env.PORT));
  });

  it('sets only variables Cutout reads, and gives a pod longer than the drain and the grace period to stop', () => {
    expectKnownVariables(Object.keys(env), 'deployment.yaml');
    for (const [name, value] of Object.entries(startVariables)) expect(env[name], name).toBe(value);
    expect(pod.terminationGracePeriodSeconds * 1000).toBeGreaterThan(Number(env.CUTOUT_DRAIN_DELAY_MS) + Number(env.CUTOUT_SHUTDOWN_GRACE_MS));
    // The drain outlasts the readiness probe's failing: the pod leaves the endpoints first.
    const probe = container.readinessProbe;
    expect(Number(env.CUTOUT_DRAIN_DELAY_MS)).toBeGreaterThan(probe.periodSeconds * probe.failureThreshold * 1000);
    expect(container.env.find((e: { name: string }) => e.name === 'DATABASE_URL').valueFrom.secretKeyRef).toBeDefined();
  });

  it('points the Service, the PodDisruptionBudget and the autoscaler at these pods, and scales on a metric Cutout exports', () => {
    const labels = deployment.spec.template.metadata.labels as Record<string, string>;
    const selects = (selector: Record<string, string>) => Object.entries(selector).every(([key, value]) => labels[key] === value);
    expect(selects(deployment.spec.selector.matchLabels)).toBe(true);
    const service = ofKind('Service');
    expect(selects(service.spec.selector)).toBe(true);
    expect(container.ports.map((p: { name: string }) => p.name)).toContain(service.spec.ports[0].targetPort);
    expect(selects(ofKind('PodDisruptionBudget').spec.selector.matchLabels)).toBe(true);

    const hpa = ofKind('HorizontalPodAutoscaler');
    expect(hpa.spec.scaleTargetRef).toMatchObject({ kind: 'Deployment', name: deployment.metadata.name });
    const metrics = new CutoutMetrics({ queued: 0, running: 0, passes: 0 });
    for (const metric of hpa.spec.metrics as { type: string; pods?: { metric: { name: string } } }[]) {
      if (metric.type === 'Pods') expect(metrics.registry.getSingleMetric(metric.pods!.metric.name), metric.pods!.metric.name).toBeDefined();
    }
  });
});

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
// be run here is run (HAProxy's own check, systemd's, kustomize's rendering), the rest is read
// and compared with what Cutout really reads and serves. The image itself is built and run, and
// compose.yaml brought up, by `npm run test:container` (scripts/container/test-container.ts).

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

  it('sets only variables Cutout reads, the glibc ones as `npm start` does, and runs the compiled entry', () => {
    expectKnownVariables(Object.keys(environment), 'cutout.service');
    for (const [name, value] of Object.entries(startVariables)) expect(environment[name]).toBe(value);
    expect(unit).toMatch(/^ExecStart=\/usr\/bin\/node \/opt\/cutout\/dist\/start\.cjs$/m);
    expect(existsSync(join(root, 'src/main.ts'))).toBe(true);
  });

  it.skipIf(systemdMissing)('with the GPU drop-in, is still a valid unit (systemd-analyze verify)', () => {
    const dir = mkdtempSync(join(tmpdir(), 'cutout-unit-'));
    // A drop-in's lines come after the unit's and override them: the two files in one say the same.
    writeFileSync(join(dir, 'cutout.service'), `${unit.replace('/usr/bin/node', process.execPath)}\n${read('deploy/cutout-gpu.conf')}`);
    const verify = spawnSync('systemd-analyze', ['verify', join(dir, 'cutout.service')], { encoding: 'utf8' });
    expect(verify.status, verify.stderr).toBe(0);
    expect(verify.stdout + verify.stderr).toBe('');
  });

  it('hides /dev from a CPU replica; the GPU drop-in shows the GPU (DRM and NVIDIA devices) and lets auto find it', () => {
    expect(unit).toMatch(/^PrivateDevices=yes$/m);
    const gpu = read('deploy/cutout-gpu.conf');
    expect(gpu).toMatch(/^\[Service\]$/m);
    expect(gpu).toMatch(/^PrivateDevices=no$/m);
    expect(gpu).toMatch(/^DeviceAllow=char-nvidia-frontend rw$/m);
    expect(gpu).toMatch(/^DeviceAllow=char-drm rw$/m);
    const environment = [...gpu.matchAll(/^Environment=(\w+)=(.*)$/gm)].map((m) => m[1]);
    expectKnownVariables(environment, 'cutout-gpu.conf');
    expect(gpu).toMatch(/^Environment=CUTOUT_EXECUTION_PROVIDER=auto$/m);
    expect(unit).toContain('cutout-gpu.conf');
  });

  it('waits longer than the drain and the grace period before SIGKILL', () => {
    expect(unit).toMatch(/^KillSignal=SIGTERM$/m);
    const stopMs = Number(/^TimeoutStopSec=(\d+)$/m.exec(unit)?.[1]) * 1000;
    expect(stopMs).toBeGreaterThan(Number(environment.CUTOUT_DRAIN_DELAY_MS) + Number(environment.CUTOUT_SHUTDOWN_GRACE_MS));
  });
});

describe('deploy/Dockerfile', () => {
  const dockerfile = read('deploy/Dockerfile');
  // The runtime stage: what the image runs with (the build stage's variables stay there).
  const runtime = dockerfile.slice(dockerfile.lastIndexOf('\nFROM '));
  const env = Object.fromEntries([...runtime.matchAll(/^\s*(?:ENV\s+)?([A-Z_]+)=(\S+?)\s*\\?$/gm)].map((m) => [m[1], m[2]]));

  it('builds in one stage and runs from another, with the model assembled at build time', () => {
    expect(dockerfile.match(/^FROM /gm)?.length).toBeGreaterThanOrEqual(2);
    expect(runtime).toMatch(/^COPY --from=build .*model\.onnx/m);
    // The build step imports the compiled assembleModel; it must exist under that name.
    expect(dockerfile).toMatch(/import \{ assembleModel \} from '\.\/dist\/model\/assemble-model\.js'/);
    expect(read('src/model/assemble-model.ts')).toMatch(/export async function assembleModel\(/);
    expect(env.CUTOUT_MODEL_PATH).toBe('/opt/cutout/model.onnx');
    expect(runtime).toMatch(/^CMD \["node", "dist\/start\.cjs"\]$/m);
  });

  it('keeps int8 for the baked-in model: the bundled calibration beside it, where model-service looks', () => {
    expect(read('src/model/int8-model.ts')).toMatch(/return `\$\{modelPath\.replace\(\/\\\.onnx\$\/i, ''\)\}\.int8-ranges\.json`/);
    expect(dockerfile).toMatch(/cp dist\/model\/isnet-int8-ranges\.json model\.int8-ranges\.json/);
    expect(runtime).toMatch(/^COPY --from=build .*\/opt\/cutout\/model\.int8-ranges\.json/m);
    expect(existsSync(join(root, 'src/model/isnet-int8-ranges.json'))).toBe(true);
  });

  it('gives the CLI its client and puts `cutout` on the PATH', () => {
    expect(runtime).toMatch(/^COPY --from=build \/opt\/cutout\/clients\/typescript\/dist /m);
    expect(runtime).toMatch(/ln -s \/opt\/cutout\/bin\/cutout\.js \/usr\/local\/bin\/cutout/);
  });

  it('sets only variables Cutout reads, and the glibc ones as `npm start` does', () => {
    expectKnownVariables(Object.keys(env), 'Dockerfile');
    for (const [name, value] of Object.entries(startVariables)) expect(env[name], name).toBe(value);
  });

  it('lets into the build context every path it copies, and nothing else', () => {
    const allowed = read('deploy/Dockerfile.dockerignore')
      .split('\n')
      .filter((line) => line.startsWith('!'))
      .map((line) => line.slice(1));
    expect(read('deploy/Dockerfile.dockerignore')).toMatch(/^\*$/m);
    const copied = [...dockerfile.matchAll(/^COPY (?!--from)(.+) \S+$/gm)].flatMap((m) => m[1].split(' '));
    expect(copied.length).toBeGreaterThan(0);
    for (const path of copied) {
      expect(allowed.some((entry) => path === entry || path.startsWith(`${entry}/`)), `${path} is copied but ignored`).toBe(true);
      expect(existsSync(join(root, path)), path).toBe(true);
    }
  });

  it('trims node_modules to what the server loads: this platform\'s ONNX Runtime, as the worker finds it', () => {
    const trim = read('deploy/trim-node-modules.mjs');
    expect(read('src/model/segmenter-worker.ts')).toMatch(/'bin', 'napi-v6', process\.platform, process\.arch/);
    expect(trim).toMatch(/join\(ort, process\.platform, process\.arch\)/);
    // The small model's chunks stay for `cutout models add isnet-small`.
    expect(trim).toMatch(/resources\['\/models\/small'\]/);
    expect(read('src/model/model-presets.ts')).toMatch(/bundled: 'small'/);
  });
});

describe('deploy/compose.yaml', () => {
  const compose = parseAllDocuments(read('deploy/compose.yaml'))[0].toJS() as { services: Record<string, any>; volumes: Record<string, unknown> };
  const cutout = compose.services.cutout;
  const cfg = read('deploy/haproxy-compose.cfg');
  const backendLines = (config: string) =>
    config
      .slice(config.indexOf('backend cutout'))
      .split('\n')
      .map((line) => line.trim())
      .filter((line) => /^(balance|option|http-check|retry-on|retries|default-server|http-error) /.test(line));

  it('runs two replicas on one data volume, with the webhook key required, behind HAProxy', () => {
    expect(cutout.deploy.replicas).toBe(2);
    expect(cutout.volumes).toContain('data:/var/lib/cutout');
    expect(compose.volumes).toHaveProperty('data');
    expectKnownVariables(Object.keys(cutout.environment), 'compose.yaml');
    expect(cutout.environment.CUTOUT_WEBHOOK_KEY).toMatch(/^\$\{CUTOUT_WEBHOOK_KEY:\?/);
    expect(cutout.environment.DATABASE_URL).toMatch(/^postgres:\/\/cutout:\$\{POSTGRES_PASSWORD:\?[^}]*\}@postgres:5432\/cutout$/);
    expect(cutout.environment.REDIS_URL).toBe('redis://redis:6379');
    expect(Object.keys(compose.services).sort()).toEqual(['cutout', 'haproxy', 'postgres', 'redis']);
    // SIGKILL only after the drain and the grace period.
    expect(Number(/^(\d+)s$/.exec(cutout.stop_grace_period)?.[1]) * 1000).toBeGreaterThan(Number(cutout.environment.CUTOUT_DRAIN_DELAY_MS) + Number(cutout.environment.CUTOUT_SHUTDOWN_GRACE_MS));
  });

  it('gives HAProxy haproxy.cfg\'s backend, with the replicas found by name', () => {
    expect(backendLines(cfg)).toEqual(backendLines(read('deploy/haproxy.cfg')));
    expect(cfg).toMatch(/^\s*server-template cutout \d+ cutout:8080 resolvers compose init-addr none$/m);
    expect(compose.services.haproxy.volumes).toContain('./haproxy-compose.cfg:/usr/local/etc/haproxy/haproxy.cfg:ro');
  });

  it.skipIf(haproxyMissing)('is valid for HAProxy (haproxy -c)', () => {
    const check = spawnSync('haproxy', ['-c', '-f', join(root, 'deploy/haproxy-compose.cfg')], { encoding: 'utf8' });
    expect(check.status, check.stdout + check.stderr).toBe(0);
  });
});

describe('deploy/kubernetes', () => {
  const dir = join(root, 'deploy/kubernetes');
  type Manifest = { apiVersion: string; kind: string; metadata: { name: string; labels?: Record<string, string>; annotations?: Record<string, string> }; spec: Record<string, any>; stringData?: Record<string, string> };
  const files = readdirSync(dir).filter((file) => file.endsWith('.yaml') && file !== 'kustomization.yaml');
  const parse = (file: string) =>
    parseAllDocuments(readFileSync(join(dir, file), 'utf8')).map((doc) => {
      expect(doc.errors, file).toEqual([]);
      return doc.toJS() as Manifest;
    });
  /** What `kubectl apply -k` applies: every manifest but the examples. */
  const manifests: Manifest[] = files.filter((file) => !file.endsWith('.example.yaml')).flatMap(parse);
  const secret = parse('secret.example.yaml')[0];
  const ofKind = (kind: string) => {
    const found = manifests.filter((m) => m.kind === kind);
    expect(found, kind).toHaveLength(1);
    return found[0];
  };
  const deployment = ofKind('Deployment');
  const pod = deployment.spec.template.spec;
  const container = pod.containers[0];
  const env = Object.fromEntries((container.env as { name: string; value?: string }[]).map((e) => [e.name, e.value]));
  const secretRefs = (container.env as { name: string; valueFrom?: { secretKeyRef?: { name: string; key: string; optional?: boolean } } }[]).filter((e) => e.valueFrom?.secretKeyRef);

  const kubectlMissing = spawnSync('kubectl', ['version', '--client'], { encoding: 'utf8' }).status !== 0;
  if (kubectlMissing) console.error('[cutout tests] kustomize rendering SKIPPED: no kubectl here');

  it('parses, and kustomization lists every manifest but the example Secret', () => {
    const kustomization = parseAllDocuments(readFileSync(join(dir, 'kustomization.yaml'), 'utf8'))[0].toJS() as { resources: string[] };
    expect(kustomization.resources.sort()).toEqual(files.filter((f) => !f.endsWith('.example.yaml')).sort());
    expect(manifests.map((m) => m.kind).sort()).toEqual(['Deployment', 'HorizontalPodAutoscaler', 'Ingress', 'PersistentVolumeClaim', 'PodDisruptionBudget', 'Service']);
  });

  it.skipIf(kubectlMissing)('renders with kustomize (kubectl kustomize), every object named and labelled', () => {
    const rendered = spawnSync('kubectl', ['kustomize', dir], { encoding: 'utf8' });
    expect(rendered.status, rendered.stderr).toBe(0);
    const objects = parseAllDocuments(rendered.stdout).map((doc) => doc.toJS() as Manifest);
    expect(objects.map((o) => o.kind).sort()).toEqual(manifests.map((m) => m.kind).sort());
  });

  // Not the API server's OpenAPI schema (kubectl's dry run needs a cluster, and kubeconform is
  // in neither npm nor Debian): the group/version of each kind Kubernetes serves today, and the
  // fields each kind must have, checked by hand.
  it('uses the current API version of each kind, with the fields each kind requires', () => {
    const versions: Record<string, string> = {
      Deployment: 'apps/v1',
      Service: 'v1',
      PersistentVolumeClaim: 'v1',
      Secret: 'v1',
      Ingress: 'networking.k8s.io/v1',
      HorizontalPodAutoscaler: 'autoscaling/v2',
      PodDisruptionBudget: 'policy/v1',
    };
    const dnsName = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
    for (const m of [...manifests, secret]) {
      expect(m.apiVersion, m.kind).toBe(versions[m.kind]);
      expect(m.metadata.name, m.kind).toMatch(dnsName);
      expect(m.metadata.labels?.['app.kubernetes.io/name'] ?? 'cutout', m.kind).toBe('cutout');
    }
    for (const c of pod.containers as { name: string; image: string }[]) {
      expect(c.name).toMatch(dnsName);
      expect(c.image).toBeTruthy();
    }
    const pvc = ofKind('PersistentVolumeClaim');
    expect(pvc.spec.resources.requests.storage).toMatch(/^\d+(Ki|Mi|Gi|Ti)$/);
    for (const mode of pvc.spec.accessModes) expect(['ReadWriteOnce', 'ReadOnlyMany', 'ReadWriteMany', 'ReadWriteOncePod']).toContain(mode);
    const ingress = ofKind('Ingress');
    for (const rule of ingress.spec.rules) for (const path of rule.http.paths) expect(['Prefix', 'Exact', 'ImplementationSpecific']).toContain(path.pathType);
    expect(secret.kind).toBe('Secret');
  });

  it('shares one ReadWriteMany volume between the pods as the data directory', () => {
    const pvc = ofKind('PersistentVolumeClaim');
    expect(pvc.spec.accessModes).toEqual(['ReadWriteMany']);
    const data = container.volumeMounts.find((mount: { mountPath: string }) => mount.mountPath === '/var/lib/cutout');
    const volume = pod.volumes.find((v: { name: string }) => v.name === data.name);
    expect(volume.persistentVolumeClaim.claimName).toBe(pvc.metadata.name);
    expect(volume.emptyDir).toBeUndefined();
  });

  it('takes DATABASE_URL, REDIS_URL and CUTOUT_WEBHOOK_KEY from the Secret the example describes', () => {
    const required = secretRefs.filter((e) => !e.valueFrom!.secretKeyRef!.optional).map((e) => e.name);
    expect(required.sort()).toEqual(['CUTOUT_WEBHOOK_KEY', 'DATABASE_URL', 'REDIS_URL']);
    expectKnownVariables(secretRefs.map((e) => e.name), 'deployment.yaml');
    for (const ref of secretRefs) {
      expect(ref.valueFrom!.secretKeyRef!.name).toBe(secret.metadata.name);
      expect(Object.keys(secret.stringData!), ref.name).toContain(ref.valueFrom!.secretKeyRef!.key);
    }
    // The key's form: 64 hex digits (src/config.ts says what it takes).
    expect(secret.stringData!.CUTOUT_WEBHOOK_KEY).toMatch(/^[0-9a-f]{64}$/);
  });

  it('serves the Service through an Ingress with TLS for every host it routes', () => {
    const ingress = ofKind('Ingress');
    const service = ofKind('Service');
    const tlsHosts = ingress.spec.tls.flatMap((t: { hosts: string[]; secretName: string }) => {
      expect(t.secretName).toBeTruthy();
      return t.hosts;
    });
    for (const rule of ingress.spec.rules) {
      expect(tlsHosts).toContain(rule.host);
      for (const path of rule.http.paths) {
        expect(path.backend.service.name).toBe(service.metadata.name);
        expect(service.spec.ports.map((p: { name: string }) => p.name)).toContain(path.backend.service.port.name);
      }
    }
    // Longer than Cutout's own deadline, so that its 504 reaches the client.
    expect(Number(ingress.metadata.annotations!['nginx.ingress.kubernetes.io/proxy-read-timeout']) * 1000).toBeGreaterThan(defaults.requestTimeoutMs);
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
    const metrics = new CutoutMetrics({ queued: 0, running: 0, passes: 0, passesFor: { interactive: 0, job: 0 } });
    for (const metric of hpa.spec.metrics as { type: string; pods?: { metric: { name: string } } }[]) {
      if (metric.type === 'Pods') expect(metrics.registry.getSingleMetric(metric.pods!.metric.name), metric.pods!.metric.name).toBeDefined();
    }
  });
});

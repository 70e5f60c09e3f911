import { execFile } from 'node:child_process';
import { copyFile, mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import SwaggerParser from '@apidevtools/swagger-parser';
import openapiTS, { astToString } from 'openapi-typescript';
import ts from 'typescript';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { OUTPUT_OPTION_NAMES } from '@cutout/client';
import { ERRORS } from '../src/errors.js';
import { ModelService } from '../src/model/model-service.js';
import { startTestApp, type TestApp } from './helpers/app.js';
import { fakeSegmenter } from './helpers/fake-segmenter.js';
import { makePhoto } from './helpers/images.js';

/**
 * The OpenAPI document the server serves (/api/v1/openapi.json, rendered at /docs): a
 * standard validator accepts it, it describes every option, header and error, and the client
 * that openapi-typescript and openapi-fetch make of it type-checks against a small program
 * (test/fixtures/generated-client/example.ts), which then runs against the server.
 */

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const REMOVALS = ['/api/v1/background/remove/url', '/api/v1/background/remove/base64', '/api/v1/background/remove/multipart'];
const RESULT_HEADERS = ['X-Width', 'X-Height', 'X-Foreground-Top', 'X-Foreground-Left', 'X-Foreground-Width', 'X-Foreground-Height'];

interface Response {
  description: string;
  headers?: Record<string, { description?: string }>;
  content?: Record<string, { schema?: unknown }>;
}
interface Operation {
  description?: string;
  tags?: string[];
  requestBody?: { content: Record<string, { schema: { properties?: Record<string, { description?: string }> } }> };
  responses: Record<string, Response>;
}
interface Document {
  info: { version: string };
  tags: { name: string; description?: string }[];
  paths: Record<string, { post: Operation; get?: Operation; delete?: Operation }>;
}
/** The remove.bg- and Photoroom-compatible routes, whose errors are not problem+json (test/compat-*.test.ts). */
const COMPAT = ['/v1.0/removebg', '/v1.0/account', '/v1/segment'];
/** The groups /docs shows, in this order: each operation's one tag. */
// One entry per operation: a job's own path has GET and DELETE.
// One entry per operation: GET and POST /api/v1/jobs, GET and DELETE /api/v1/jobs/{id}.
const JOBS = ['/api/v1/jobs', '/api/v1/jobs', '/api/v1/jobs/multipart', '/api/v1/jobs/{id}', '/api/v1/jobs/{id}', '/api/v1/jobs/{id}/items/{item}', '/api/v1/jobs/{id}/results'];
const GROUPS = { removal: REMOVALS, jobs: JOBS, tokens: ['/api/v1/auth/token'], compatibility: COMPAT };

describe('the OpenAPI document', () => {
  let t: TestApp;
  let origin: string;
  let document: Document;

  beforeAll(async () => {
    // The document needs no model; a fake one answers the generated client's removal at once.
    t = await startTestApp({ rateLimit: 0 }, { model: ModelService.ofSegmenter(fakeSegmenter()) });
    await t.app.listen({ port: 0, host: '127.0.0.1' });
    origin = `http://127.0.0.1:${(t.app.server.address() as AddressInfo).port}`;
    document = (await (await fetch(`${origin}/api/v1/openapi.json`)).json()) as Document;
  });
  afterAll(async () => {
    await t?.close();
  });

  it('passes a standard validator (@apidevtools/swagger-parser), and is the one /docs renders', async () => {
    await expect(SwaggerParser.validate(structuredClone(document) as never)).resolves.toBeDefined();
    expect(await (await fetch(`${origin}/docs/json`)).json()).toEqual(document);
  });

  it('gives Cutout\'s version from package.json, and puts every operation in exactly one documented group', async () => {
    const { version } = JSON.parse(await readFile(join(ROOT, 'package.json'), 'utf8')) as { version: string };
    expect(document.info.version).toBe(version);
    expect(document.tags.map((tag) => tag.name)).toEqual(Object.keys(GROUPS));
    for (const tag of document.tags) expect(tag.description, tag.name).toMatch(/\w{3,}.*\w{3,}/);
    const grouped: Record<string, string[]> = {};
    for (const [path, methods] of Object.entries(document.paths)) {
      for (const [method, operation] of Object.entries(methods) as [string, Operation][]) {
        expect(operation.tags, `${method} ${path}`).toHaveLength(1);
        (grouped[operation.tags![0]] ??= []).push(path);
      }
    }
    expect(Object.fromEntries(Object.entries(grouped).map(([tag, paths]) => [tag, paths.sort()]))).toEqual(
      Object.fromEntries(Object.entries(GROUPS).map(([tag, paths]) => [tag, [...paths].sort()])),
    );
  });

  it('describes every registered error, each code under its status, with x-request-id on every answer and Retry-After on 429 and 503', () => {
    const documented = new Set<string>();
    const operations = Object.entries(document.paths)
      .filter(([path]) => !COMPAT.includes(path))
      .flatMap(([path, methods]) => Object.values(methods as Record<string, Operation>).map((operation) => [path, operation] as const));
    for (const [path, operation] of operations) {
      for (const [status, response] of Object.entries(operation.responses)) {
        const headers = Object.keys(response.headers ?? {}).map((name) => name.toLowerCase());
        expect(headers, `${path} ${status}`).toContain('x-request-id');
        if (status === '429' || status === '503') expect(headers, `${path} ${status}`).toContain('retry-after');
        if (status.startsWith('2')) continue;
        const problem = response.content?.['application/problem+json']?.schema as { properties: { code: { enum: string[] } } } | undefined;
        expect(problem?.properties.code.enum.sort(), `${path} ${status}`).toEqual(Object.keys(ERRORS).sort());
        for (const [code, entry] of Object.entries(ERRORS)) {
          if (response.description.includes(`\`${code}\``)) {
            expect(String(entry.status), `${code} under ${path} ${status}`).toBe(status);
            documented.add(code);
          }
        }
      }
    }
    // Every code is some endpoint's answer (not_found a job's, for one).
    expect([...documented].sort()).toEqual(Object.keys(ERRORS).sort());
    for (const path of REMOVALS) expect(Object.keys(document.paths[path].post.responses)).toEqual(expect.arrayContaining(['200', '400', '401', '415', '422', '429', '503', '504']));
    expect(Object.keys(document.paths['/api/v1/auth/token'].post.responses)).toEqual(expect.arrayContaining(['200', '401']));
  });

  it('describes the compatible routes: remove.bg\'s parameters and headers, its error codes, the X-Api-Key scheme', () => {
    const removebg = document.paths['/v1.0/removebg'].post;
    for (const type of ['multipart/form-data', 'application/x-www-form-urlencoded', 'application/json']) {
      const fields = removebg.requestBody!.content[type].schema.properties!;
      for (const name of ['image_file_b64', 'image_url', 'size', 'type', 'format', 'roi', 'crop', 'crop_margin', 'scale', 'position', 'channels', 'add_shadow', 'semitransparency', 'bg_color', 'bg_image_url']) {
        expect(fields[name]?.description, `${type}: ${name}`).toBeTruthy();
      }
    }
    for (const name of ['x-width', 'x-height', 'x-credits-charged', 'x-ratelimit-limit', 'x-ratelimit-remaining', 'x-ratelimit-reset', 'x-foreground-top']) {
      expect(Object.keys(removebg.responses['200'].headers ?? {}), name).toContain(name);
    }
    expect(removebg.responses['403'].description).toContain('`auth_failed`');
    expect(removebg.responses['400'].description).toContain('`missing_source`');
    expect(document.paths['/v1.0/account'].get?.responses['200']).toBeDefined();
    expect(Object.keys(document.paths['/v1/segment'].post.responses['200'].content ?? {})).toContain('image/png');
  });

  it('describes every output option of the three removals, and the headers and image types of their answers', () => {
    for (const path of ['/api/v1/background/remove/url', '/api/v1/background/remove/base64']) {
      const properties = document.paths[path].post.requestBody!.content['application/json'].schema.properties!;
      for (const option of OUTPUT_OPTION_NAMES) expect(properties[option]?.description, `${path}: ${option}`).toBeTruthy();
    }
    const form = document.paths['/api/v1/background/remove/multipart'].post.requestBody!.content['multipart/form-data'].schema.properties!;
    for (const field of ['file', ...OUTPUT_OPTION_NAMES]) expect(form[field]?.description, `multipart: ${field}`).toBeTruthy();
    for (const path of REMOVALS) {
      const ok = document.paths[path].post.responses['200'];
      const headers = Object.fromEntries(Object.entries(ok.headers ?? {}).map(([name, header]) => [name.toLowerCase(), header]));
      for (const name of [...RESULT_HEADERS, 'RateLimit-Limit', 'RateLimit-Remaining', 'RateLimit-Reset']) expect(headers[name.toLowerCase()]?.description, `${path}: ${name}`).toBeTruthy();
      expect(Object.keys(ok.content ?? {}), path).toEqual(expect.arrayContaining(['application/json', 'image/png', 'image/webp', 'image/jpeg']));
    }
  });

  it('makes a client with openapi-typescript and openapi-fetch that type-checks against a small program, which then runs', { timeout: 60_000 }, async () => {
    // Inside the repository, so that the program finds openapi-fetch in node_modules.
    await mkdir(join(ROOT, 'node_modules', '.cache'), { recursive: true });
    const dir = await mkdtemp(join(ROOT, 'node_modules', '.cache', 'cutout-openapi-'));
    try {
      await writeFile(join(dir, 'cutout-api.ts'), astToString(await openapiTS(structuredClone(document) as never)));
      await copyFile(join(ROOT, 'test', 'fixtures', 'generated-client', 'example.ts'), join(dir, 'example.ts'));
      await writeFile(join(dir, 'package.json'), '{ "type": "module" }\n');
      const program = ts.createProgram([join(dir, 'example.ts')], {
        strict: true,
        target: ts.ScriptTarget.ES2022,
        module: ts.ModuleKind.NodeNext,
        moduleResolution: ts.ModuleResolutionKind.NodeNext,
        noEmit: true,
        skipLibCheck: true,
        types: ['node'],
        typeRoots: [join(ROOT, 'node_modules', '@types')],
      });
      const problems = ts.getPreEmitDiagnostics(program).map((diagnostic) => ts.flattenDiagnosticMessageText(diagnostic.messageText, '\n'));
      expect(problems).toEqual([]);

      const photo = (await makePhoto('png', 64, 48)).toString('base64');
      const { tokenId } = await t.tokens.createUserToken('generated-client');
      const output = await new Promise<string>((resolve, reject) =>
        execFile(process.execPath, ['--import', 'tsx', join(dir, 'example.ts'), photo], { cwd: ROOT, env: { ...process.env, CUTOUT_URL: origin, CUTOUT_TOKEN_ID: tokenId } }, (error, stdout, stderr) =>
          error ? reject(new Error(`${error.message}\n${stderr}`)) : resolve(stdout),
        ),
      );
      const printed = JSON.parse(output) as { expiresIn: number; base64Length: number };
      expect(printed.expiresIn).toBe(t.config.managedTokenTtl);
      expect(printed.base64Length).toBeGreaterThan(100);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});

import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { Script } from 'node:vm';
import Fastify from 'fastify';
import { describe, expect, it } from 'vitest';
import { ASSETS, SCRIPT_FILES } from '../src/dashboard/assets/asset-files.js';
import { assetRoutes } from '../src/dashboard/routes/assets.js';

/**
 * The dashboard's script is TypeScript under src/dashboard/assets/browser/, compiled into dist/
 * by the build (and by the tests' global set-up); the app serves that compiled file. The
 * browser tests under test/browser/ run it; these check how it is served.
 */
describe("the dashboard's script", () => {
  it('is the compiled browser code, at a URL named by its content and cached for good', async () => {
    expect(SCRIPT_FILES.map((file) => file.slice(file.lastIndexOf('/') + 1))).toEqual(['dashboard.js', 'batch.js']);
    const parts = await Promise.all(['dashboard.js', 'batch.js'].map((name) => readFile(new URL(`../dist/dashboard/assets/browser/${name}`, import.meta.url), 'utf8')));
    const compiled = parts.join('\n');
    const app = Fastify();
    await app.register(assetRoutes, { prefix: '/dashboard' });
    const response = await app.inject({ method: 'GET', url: ASSETS.js.path });
    await app.close();
    expect(response.statusCode).toBe(200);
    expect(response.headers['content-type']).toBe('text/javascript; charset=utf-8');
    expect(response.headers['cache-control']).toBe('public, max-age=31536000, immutable');
    expect(response.body).toBe(compiled);
    expect(ASSETS.js.path).toBe(`/dashboard/assets/dashboard.${createHash('sha256').update(compiled).digest('hex').slice(0, 12)}.js`);
  });

  it('is a classic script, as the page loads it: no import or export', () => {
    // An import or export in browser/*.ts makes tsc emit module syntax, which a
    // `<script defer>` cannot parse: the page would run no script at all.
    expect(() => new Script(ASSETS.js.body, { filename: 'dashboard.js' })).not.toThrow();
    expect(ASSETS.js.body).toContain("getElementById('try-it')");
    expect(ASSETS.js.body).toContain("getElementById('batch')");
  });
});

import { availableParallelism } from 'node:os';
import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../src/config.js';

describe('loadConfig', () => {
  it('gives the documented defaults for an empty environment', () => {
    const config = loadConfig({});
    expect(config).toMatchObject({ port: 8080, host: '127.0.0.1', dataDir: './data', managedTokenTtl: 3600, urlAllowPrivate: false, maxPixels: 50_000_000 });
    expect(config.databaseUrl).toBeUndefined();
    expect(config.modelPrecision).toBe('auto');
    expect(Object.isFrozen(config)).toBe(true);
  });

  it.each(['auto', 'int8', 'fp32'])('takes CUTOUT_MODEL_PRECISION=%s', (value) => {
    expect(loadConfig({ CUTOUT_MODEL_PRECISION: value }).modelPrecision).toBe(value);
  });

  it('reads and converts variables; empty ones count as unset', () => {
    const config = loadConfig({ PORT: '9000', CUTOUT_URL_ALLOW_PRIVATE: 'true', CUTOUT_URL_DENY_HOSTS: 'a.example, b.example', HOST: '' });
    expect(config).toMatchObject({ port: 9000, urlAllowPrivate: true, urlDenyHosts: ['a.example', 'b.example'], host: '127.0.0.1' });
  });

  it('chooses the model sessions for the provider named, and shares the cores among the sessions given', () => {
    const cores = availableParallelism();
    expect(loadConfig({ CUTOUT_EXECUTION_PROVIDER: 'webgpu' })).toMatchObject({ inferenceConcurrency: 1, inferenceThreads: cores });
    expect(loadConfig({ CUTOUT_EXECUTION_PROVIDER: 'webgpu', CUTOUT_INFERENCE_CONCURRENCY: '2' })).toMatchObject({ inferenceConcurrency: 2, inferenceThreads: Math.max(1, Math.floor(cores / 2)) });
    expect(loadConfig({ CUTOUT_INFERENCE_CONCURRENCY: '4', CUTOUT_INFERENCE_THREADS: '3' })).toMatchObject({ inferenceConcurrency: 4, inferenceThreads: 3 });
    expect(loadConfig({}, { inferenceConcurrency: 3 })).toMatchObject({ inferenceConcurrency: 3, inferenceThreads: Math.max(1, Math.floor(cores / 3)) });
  });

  it.each([
    ['PORT', 'eighty'],
    ['PORT', '70000'],
    ['CUTOUT_MANAGED_TOKEN_TTL', '0'],
    ['CUTOUT_URL_ALLOW_PRIVATE', 'maybe'],
    ['DATABASE_URL', 'mysql://localhost/test'],
    ['LOG_LEVEL', 'loud'],
    ['CUTOUT_MODEL_PRECISION', 'int4'],
    ['CUTOUT_MODEL_PRECISION', 'float32'],
  ])('refuses %s=%s with a message naming the variable', (name, value) => {
    expect(() => loadConfig({ [name]: value })).toThrow(ConfigError);
    expect(() => loadConfig({ [name]: value })).toThrow(new RegExp(`^${name}=`));
  });
});

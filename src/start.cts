/**
 * The server's entry (`npm start`, the image, the systemd unit): sizes libuv's thread pool from
 * the cores, then starts `main.js`. libuv reads UV_THREADPOOL_SIZE once, when its pool first
 * runs, and loading an ES module already runs it (the loader reads files there), so the size
 * can only be set from a CommonJS entry like this one, before anything is imported that way.
 * An operator's own UV_THREADPOOL_SIZE is kept.
 */
import { availableParallelism } from 'node:os';
import { threadDefaults } from './threads/thread-defaults.cjs';

if (!process.env.UV_THREADPOOL_SIZE?.trim()) process.env.UV_THREADPOOL_SIZE = String(threadDefaults(availableParallelism()).libuvThreads);

import('./main.js').catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});

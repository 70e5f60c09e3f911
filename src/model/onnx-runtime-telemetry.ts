import { isMainThread } from 'node:worker_threads';

/**
 * Turns ONNX Runtime's own telemetry off in this process, unless its operator has set
 * `ORT_DISABLE_TELEMETRY` already. From 1.30, onnxruntime-node on Linux and macOS starts a
 * telemetry client (Microsoft's 1DS) with the first session a process creates: it writes an
 * empty `mat-debug-<pid>.log` and a `.ses` file in the temporary directory, a device
 * identifier and an offline event cache under `~/.cache/Microsoft/DeveloperTools/`, and
 * uploads usage events where it finds a CA bundle. A self-hosted service should do none of
 * that. The variable is read once, from the process's environment, when the first session
 * is created; a worker thread's `process.env` is a copy that native code never sees, so this
 * must run on the main thread, before any model thread starts (`onnx-segmenter.ts`,
 * `precision.ts`, and the scripts and tests that create sessions themselves); on another
 * thread it can do nothing.
 *
 * @example disableOnnxRuntimeTelemetry(); await startWorkerThread(segmenterWorker, workerData)
 */
export function disableOnnxRuntimeTelemetry(): void {
  if (isMainThread) process.env.ORT_DISABLE_TELEMETRY ??= '1';
}

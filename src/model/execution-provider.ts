/**
 * Whether the installed onnxruntime-node can run the models on the execution provider the
 * operator asked for (CUTOUT_EXECUTION_PROVIDER), and what to install when it cannot. The
 * model thread asks ONNX Runtime which providers this build knows (segmenter-worker.ts, the
 * only module that imports it) and checks with this before it loads a model, so that a start
 * on a missing provider stops with these words rather than ONNX Runtime's.
 */

/** The `code` of the error a start on an unavailable provider fails with; it crosses threads (thread-error.ts). */
export const PROVIDER_UNAVAILABLE = 'EXECUTION_PROVIDER_UNAVAILABLE';

/** One provider as onnxruntime-node's `listSupportedBackends()` reports it. */
export interface SupportedBackend {
  name: string;
  /** False when its libraries are not in the npm package (CUDA, TensorRT): they are installed separately. */
  bundled: boolean;
}

/** The libraries an unbundled provider needs beside onnxruntime-node's binding, by provider. */
const PROVIDER_LIBRARIES: Record<string, string[]> = {
  cuda: ['libonnxruntime_providers_shared.so', 'libonnxruntime_providers_cuda.so'],
  tensorrt: ['libonnxruntime_providers_shared.so', 'libonnxruntime_providers_tensorrt.so'],
};

/** How to install an unbundled provider's libraries with onnxruntime-node's own install script. */
export const CUDA_INSTALL_STEP = 'ONNXRUNTIME_NODE_INSTALL=cuda12 node node_modules/onnxruntime-node/script/install.js';

function unavailable(message: string): Error {
  return Object.assign(new Error(message), { code: PROVIDER_UNAVAILABLE });
}

/**
 * Throws an error with code {@link PROVIDER_UNAVAILABLE} saying what to install when
 * `provider` cannot run here: not offered by this build of onnxruntime-node on this platform,
 * or offered but its libraries are missing from `binaryDir` (`exists` checks a file there).
 *
 * @example assertProviderAvailable('cuda', ort.listSupportedBackends(), binaryDir, existsSync)
 */
export function assertProviderAvailable(provider: string, supported: readonly SupportedBackend[], binaryDir: string, exists: (path: string) => boolean): void {
  if (provider === 'cpu') return;
  const backend = supported.find((entry) => entry.name === provider);
  const offered = supported.map((entry) => entry.name).join(', ');
  if (!backend) {
    throw unavailable(
      `CUTOUT_EXECUTION_PROVIDER=${provider}, but the installed onnxruntime-node offers ${offered} on ${process.platform}/${process.arch}: run on one of those (cpu works everywhere), or on a platform whose ONNX Runtime build has ${provider} (dml on Windows, coreml on macOS, cuda on Linux x64)`,
    );
  }
  const missing = backend.bundled ? [] : (PROVIDER_LIBRARIES[provider] ?? []).filter((file) => !exists(`${binaryDir}/${file}`));
  if (missing.length > 0) {
    throw unavailable(
      `CUTOUT_EXECUTION_PROVIDER=${provider}, but ONNX Runtime's ${provider} libraries are not installed (${missing.join(', ')} missing from ${binaryDir}); the default install skips their download. Install them with \`${CUDA_INSTALL_STEP}\`, with CUDA 12 and cuDNN 9 on the host (docs/models.md, "GPU")`,
    );
  }
}

/** What a host needs for WebGPU on Linux, for the messages that say it is missing. */
export const WEBGPU_NEEDS =
  'the Vulkan loader (Debian and Ubuntu: libvulkan1) and the GPU\'s Vulkan driver (NVIDIA: its proprietary driver, whose nvidia_icd.json VK_DRIVER_FILES may name; AMD and Intel: mesa-vulkan-drivers), and in a container the GPU passed in (`--gpus all` with the NVIDIA Container Toolkit, or `--device /dev/dri`)';

/**
 * The error to raise when ONNX Runtime refuses the provider while creating a session. For
 * WebGPU without an adapter (Dawn's "No supported adapters") it says what the host lacks and
 * what to install, without ONNX Runtime's text around Dawn's; `found` is what the host
 * offers (vulkan-drivers.ts's summary).
 */
export function providerRefused(provider: string, cause: unknown, found?: string): Error {
  const text = cause instanceof Error ? cause.message : String(cause);
  if (provider === 'webgpu' && /adapter/i.test(text)) {
    // Dawn's own words only, without the C++ source lines ONNX Runtime puts before them.
    const said = text.split(/was false\.\s*/).pop()?.trim();
    return unavailable(`CUTOUT_EXECUTION_PROVIDER=webgpu, but WebGPU found no GPU adapter (${said}${found ? `; ${found}` : ''}): install ${WEBGPU_NEEDS}; or run with CUTOUT_EXECUTION_PROVIDER=cpu (docs/models.md, "GPU")`);
  }
  return Object.assign(new Error(`CUTOUT_EXECUTION_PROVIDER=${provider}: ONNX Runtime could not start it (${text}); check its libraries and drivers (docs/models.md, "GPU")`, { cause }), {
    code: PROVIDER_UNAVAILABLE,
  });
}

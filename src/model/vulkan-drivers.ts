/**
 * What a Linux host offers WebGPU, read from the files the Vulkan loader reads rather than by
 * starting Dawn: ONNX Runtime's Node binding does not tell which adapter its WebGPU provider
 * took (nor whether it is a GPU or a CPU rasterizer such as Mesa's lavapipe), and starting
 * Dawn costs a second or more and prints its warnings on the way. A hardware adapter needs a
 * Vulkan driver that is not a software one (its ICD manifest, `*_icd.json`) and a GPU device
 * node for it to open (`/dev/dri/renderD*`, `/dev/nvidia0`, WSL's `/dev/dxg`).
 * `CUTOUT_EXECUTION_PROVIDER=auto` looks only here on a host without both, so that a CPU-only
 * host pays a few directory reads for it; where both are present, it measures a pass.
 */

import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { homedir } from 'node:os';
import { basename, join } from 'node:path';

/** One Vulkan driver as its ICD manifest names it. */
export interface VulkanDriver {
  /** The manifest's path. */
  manifest: string;
  /** The driver library it names (`libvulkan_lvp.so`, `libGLX_nvidia.so.0`, …). */
  library: string;
  /** True for a CPU rasterizer: Mesa's lavapipe, Google's SwiftShader. */
  software: boolean;
}

/** What the host offers WebGPU's Vulkan backend, and what `auto` makes of it. */
export interface GpuHint {
  /** True when a hardware adapter may be there: a driver that is not a software one, and a GPU device to open. */
  hardware: boolean;
  drivers: VulkanDriver[];
  /** GPU device nodes found. */
  devices: string[];
  /** Whether the Vulkan loader (libvulkan.so.1) was found. */
  loader: boolean;
  /** What was found, in words, for the start log and `/readyz`. */
  summary: string;
}

/** The file system reads this module makes, so that tests can give it another host. */
export interface HostFiles {
  readdir(path: string): string[];
  readFile(path: string): string;
  isDirectory(path: string): boolean;
  exists(path: string): boolean;
}

const realFiles: HostFiles = {
  readdir: (path) => readdirSync(path),
  readFile: (path) => readFileSync(path, 'utf8'),
  isDirectory: (path) => statSync(path, { throwIfNoEntry: false })?.isDirectory() ?? false,
  exists: (path) => existsSync(path),
};

const SOFTWARE_DRIVER = /lvp|lavapipe|swiftshader|llvmpipe/i;

/** The manifests' folders the loader searches when no variable overrides them (its Linux defaults, XDG first). */
function defaultManifestDirs(env: NodeJS.ProcessEnv): string[] {
  const configDirs = [env.XDG_CONFIG_HOME ?? join(homedir(), '.config'), ...(env.XDG_CONFIG_DIRS ?? '/etc/xdg').split(':'), '/etc'];
  const dataDirs = [env.XDG_DATA_HOME ?? join(homedir(), '.local', 'share'), ...(env.XDG_DATA_DIRS ?? '/usr/local/share:/usr/share').split(':')];
  return [...configDirs, ...dataDirs].filter(Boolean).map((dir) => join(dir, 'vulkan', 'icd.d'));
}

/** The manifest files at `entries` (files, or folders of `*.json`), in order. */
function manifestFiles(entries: string[], files: HostFiles): string[] {
  return entries.flatMap((entry) => {
    if (files.isDirectory(entry)) {
      return files
        .readdir(entry)
        .filter((name) => name.endsWith('.json'))
        .sort()
        .map((name) => join(entry, name));
    }
    return files.exists(entry) ? [entry] : [];
  });
}

/**
 * The Vulkan drivers the loader would load here: those of VK_DRIVER_FILES (or the older
 * VK_ICD_FILENAMES) when set, else those of its default folders and VK_ADD_DRIVER_FILES.
 * Drivers named in VK_LOADER_DRIVERS_DISABLE are left out (exact file names or `*` globs).
 */
export function vulkanDrivers(env: NodeJS.ProcessEnv = process.env, files: HostFiles = realFiles): VulkanDriver[] {
  const list = (value: string | undefined) => (value ?? '').split(':').filter(Boolean);
  const override = env.VK_DRIVER_FILES ?? env.VK_ICD_FILENAMES;
  const entries = override !== undefined ? list(override) : [...list(env.VK_ADD_DRIVER_FILES), ...defaultManifestDirs(env)];
  const disabled = (env.VK_LOADER_DRIVERS_DISABLE ?? '').split(',').filter(Boolean).map((pattern) => new RegExp(`^${pattern.replace(/[.+?^${}()|[\]\\]/g, '\\$&').replaceAll('*', '.*')}$`));
  const drivers: VulkanDriver[] = [];
  for (const manifest of new Set(manifestFiles(entries, files))) {
    if (disabled.some((pattern) => pattern.test(basename(manifest)))) continue;
    let library: unknown;
    try {
      library = (JSON.parse(files.readFile(manifest)) as { ICD?: { library_path?: unknown } }).ICD?.library_path;
    } catch {
      continue;
    }
    if (typeof library === 'string') drivers.push({ manifest, library, software: SOFTWARE_DRIVER.test(basename(library)) || SOFTWARE_DRIVER.test(basename(manifest)) });
  }
  return drivers;
}

/** GPU device nodes: DRM render nodes (AMD, Intel, Nouveau, virtio), NVIDIA's, WSL's. */
export function gpuDevices(files: HostFiles = realFiles): string[] {
  const render = files.isDirectory('/dev/dri') ? files.readdir('/dev/dri').filter((name) => name.startsWith('renderD')).map((name) => `/dev/dri/${name}`) : [];
  const nvidia = files.readdir('/dev').filter((name) => /^nvidia\d+$/.test(name)).map((name) => `/dev/${name}`);
  return [...render, ...nvidia, ...(files.exists('/dev/dxg') ? ['/dev/dxg'] : [])];
}

/** Whether the dynamic linker can find the Vulkan loader: in its cache, or in LD_LIBRARY_PATH. */
export function hasVulkanLoader(env: NodeJS.ProcessEnv = process.env, files: HostFiles = realFiles): boolean {
  const inPath = (env.LD_LIBRARY_PATH ?? '').split(':').filter(Boolean).some((dir) => files.exists(join(dir, 'libvulkan.so.1')));
  if (inPath) return true;
  try {
    return files.readFile('/etc/ld.so.cache').includes('libvulkan.so.1');
  } catch {
    return false;
  }
}

/**
 * What this host offers WebGPU (see the module's comment). Off Linux (Metal, Direct3D 12)
 * there is no such cheap look: `hardware` is true and the measured pass decides.
 *
 * @example if (!gpuHint().hardware) runOnCpu()
 */
export function gpuHint(env: NodeJS.ProcessEnv = process.env, files: HostFiles = realFiles, platform: NodeJS.Platform = process.platform): GpuHint {
  if (platform !== 'linux') return { hardware: true, drivers: [], devices: [], loader: true, summary: `WebGPU on ${platform} uses the system's own graphics API` };
  const drivers = vulkanDrivers(env, files);
  const devices = gpuDevices(files);
  const loader = hasVulkanLoader(env, files);
  const hardwareDrivers = drivers.filter((driver) => !driver.software);
  const named = (list: VulkanDriver[]) => list.map((driver) => basename(driver.manifest)).join(', ');
  const summary = !loader
    ? 'no Vulkan loader (libvulkan.so.1)'
    : drivers.length === 0
      ? 'no Vulkan driver (no *_icd.json)'
      : hardwareDrivers.length === 0
        ? `only software Vulkan drivers (${named(drivers)})`
        : devices.length === 0
          ? `Vulkan drivers (${named(hardwareDrivers)}) but no GPU device (/dev/dri/renderD*, /dev/nvidia*)`
          : `Vulkan drivers ${named(hardwareDrivers)} and ${devices.join(', ')}`;
  return { hardware: loader && hardwareDrivers.length > 0 && devices.length > 0, drivers, devices, loader, summary };
}

/**
 * VK_LOADER_DRIVERS_DISABLE extended with the software drivers among `drivers`, so that the
 * Vulkan loader (1.3.234 and later) hides them and WebGPU can only find a hardware adapter;
 * undefined when there are none to hide.
 */
export function hideSoftwareDrivers(drivers: readonly VulkanDriver[], current: string | undefined): string | undefined {
  const software = drivers.filter((driver) => driver.software).map((driver) => basename(driver.manifest));
  if (software.length === 0) return undefined;
  return [...new Set([...(current ?? '').split(',').filter(Boolean), ...software])].join(',');
}

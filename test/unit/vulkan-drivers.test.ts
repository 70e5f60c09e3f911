import { describe, expect, it } from 'vitest';
import { gpuHint, hideSoftwareDrivers, vulkanDrivers, type HostFiles } from '../../src/model/vulkan-drivers.js';

// What CUTOUT_EXECUTION_PROVIDER=auto reads of a host before it would start WebGPU: the
// Vulkan drivers the loader would load and the GPU devices there, on made-up hosts.

/** A host of `files` (path → content; folders are implied by the paths in them). */
function host(files: Record<string, string>): HostFiles {
  const paths = Object.keys(files);
  const isDirectory = (path: string) => paths.some((file) => file.startsWith(`${path}/`));
  return {
    readdir: (path) => [...new Set(paths.filter((file) => file.startsWith(`${path}/`)).map((file) => file.slice(path.length + 1).split('/')[0]))],
    readFile: (path) => {
      if (!(path in files)) throw Object.assign(new Error(`ENOENT ${path}`), { code: 'ENOENT' });
      return files[path];
    },
    isDirectory,
    exists: (path) => path in files || isDirectory(path),
  };
}

const icd = (library: string) => JSON.stringify({ file_format_version: '1.0.0', ICD: { library_path: library, api_version: '1.3.0' } });
const LOADER = { '/etc/ld.so.cache': 'ld.so-1.7.0 … libvulkan.so.1 …' };
const MESA = {
  '/usr/share/vulkan/icd.d/lvp_icd.json': icd('/usr/lib/x86_64-linux-gnu/libvulkan_lvp.so'),
  '/usr/share/vulkan/icd.d/radeon_icd.json': icd('/usr/lib/x86_64-linux-gnu/libvulkan_radeon.so'),
  '/usr/share/vulkan/icd.d/intel_icd.json': icd('/usr/lib/x86_64-linux-gnu/libvulkan_intel.so'),
};
const NVIDIA = { '/usr/share/vulkan/icd.d/nvidia_icd.json': icd('libGLX_nvidia.so.0'), '/dev/nvidia0': '', '/dev/nvidiactl': '' };
const env = { XDG_CONFIG_HOME: '/root/.config', XDG_DATA_HOME: '/root/.local/share' };

describe('vulkan-drivers', () => {
  it('a host with Mesa (lavapipe among its drivers) and no GPU device has no hardware adapter', () => {
    const hint = gpuHint(env, host({ ...LOADER, ...MESA, '/dev/null': '' }), 'linux');
    expect(hint.hardware).toBe(false);
    expect(hint.drivers.filter((driver) => driver.software).map((driver) => driver.library)).toEqual(['/usr/lib/x86_64-linux-gnu/libvulkan_lvp.so']);
    expect(hint.summary).toBe('Vulkan drivers (intel_icd.json, radeon_icd.json) but no GPU device (/dev/dri/renderD*, /dev/nvidia*)');
  });

  it('lavapipe alone is software only, render node or not', () => {
    const hint = gpuHint(env, host({ ...LOADER, '/usr/share/vulkan/icd.d/lvp_icd.json': MESA['/usr/share/vulkan/icd.d/lvp_icd.json'], '/dev/dri/renderD128': '' }), 'linux');
    expect(hint).toMatchObject({ hardware: false, summary: 'only software Vulkan drivers (lvp_icd.json)' });
  });

  it('an NVIDIA driver with its device, or Mesa with a render node, may be a hardware adapter', () => {
    expect(gpuHint(env, host({ ...LOADER, ...NVIDIA }), 'linux')).toMatchObject({ hardware: true, devices: ['/dev/nvidia0'] });
    expect(gpuHint(env, host({ ...LOADER, ...MESA, '/dev/dri/renderD128': '', '/dev/dri/card0': '' }), 'linux')).toMatchObject({ hardware: true, devices: ['/dev/dri/renderD128'] });
  });

  it('without the Vulkan loader there is none, whatever the drivers', () => {
    expect(gpuHint(env, host({ ...NVIDIA }), 'linux')).toMatchObject({ hardware: false, loader: false, summary: 'no Vulkan loader (libvulkan.so.1)' });
    expect(gpuHint({ ...env, LD_LIBRARY_PATH: '/opt/vk' }, host({ ...NVIDIA, '/opt/vk/libvulkan.so.1': '' }), 'linux').hardware).toBe(true);
  });

  it('VK_DRIVER_FILES (or VK_ICD_FILENAMES) replaces the folders, VK_LOADER_DRIVERS_DISABLE hides drivers', () => {
    const files = host({ ...LOADER, ...MESA, ...NVIDIA, '/opt/nv/nvidia_icd.json': icd('libGLX_nvidia.so.0') });
    expect(vulkanDrivers({ ...env, VK_DRIVER_FILES: '/opt/nv/nvidia_icd.json' }, files).map((driver) => driver.manifest)).toEqual(['/opt/nv/nvidia_icd.json']);
    expect(vulkanDrivers({ ...env, VK_ICD_FILENAMES: '/usr/share/vulkan/icd.d' }, files)).toHaveLength(4);
    expect(vulkanDrivers({ ...env, VK_DRIVER_FILES: '/nowhere/icd.json' }, files)).toEqual([]);
    expect(vulkanDrivers({ ...env, VK_LOADER_DRIVERS_DISABLE: 'lvp_icd.json,*radeon*' }, files).map((driver) => driver.manifest.split('/').pop())).toEqual(['intel_icd.json', 'nvidia_icd.json']);
  });

  it('hideSoftwareDrivers adds the software drivers to what the operator already hides', () => {
    const drivers = vulkanDrivers(env, host({ ...LOADER, ...MESA }));
    expect(hideSoftwareDrivers(drivers, undefined)).toBe('lvp_icd.json');
    expect(hideSoftwareDrivers(drivers, 'intel_icd.json')).toBe('intel_icd.json,lvp_icd.json');
    expect(hideSoftwareDrivers(drivers.filter((driver) => !driver.software), undefined)).toBeUndefined();
  });

  it('off Linux, the measured pass decides', () => {
    expect(gpuHint(env, host({}), 'darwin').hardware).toBe(true);
  });
});

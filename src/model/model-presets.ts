/**
 * The open background-removal models Cutout knows by name: one table of what each file is
 * (its hash, where its publisher offers it, its licence) and how to run it
 * ({@link ModelProcessing}). `cutout models add NAME FILE` checks a file against its row;
 * docs/models.md is checked against this table by test/docs.test.ts.
 *
 * The hashes of the files rembg publishes are the ones rembg itself checks
 * (rembg/sessions/*.py). The processing follows each model's reference code, which differs
 * from rembg's in two ways on purpose: rembg divides the pixels by the picture's brightest
 * value instead of 255, and stretches every output so that its lowest value is 0 and its
 * highest 1, which turns a picture with no subject into a full-strength mask.
 */

import { IMAGENET, ISNET_PROCESSING, type ModelProcessing } from './model-processing.js';

/** One named model: its file, its provenance and how to run it. */
export interface ModelPreset {
  name: string;
  /** The file name its publisher gives it. */
  fileName: string;
  /** `md5:…` or `sha256:…` of the file, as its publisher's checks state it. */
  hash: string;
  /** Network and backbone, for `models list`. */
  architecture: string;
  /** The licence of the weights, as `models list` shows it. */
  licence: string;
  /** False when the licence forbids commercial use (`models list` says "non-commercial"). */
  commercial: boolean;
  /** Where the operator downloads the file; `bundled` rows ship in Cutout's npm dependency. */
  source: string;
  /** The variant of the bundled package's IS-Net, for the two rows that ship with Cutout. */
  bundled?: 'medium' | 'small';
  processing: ModelProcessing;
}

const REMBG_RELEASE = 'https://github.com/danielgatis/rembg/releases/download/v0.0.0';
const U2NET: ModelProcessing = { inputSize: 320, scale: 255, ...IMAGENET, outputIndex: 0, activation: 'none' };
const BIREFNET: ModelProcessing = { inputSize: 1024, scale: 255, ...IMAGENET, outputIndex: 0, activation: 'sigmoid' };

const rembg = (name: string, fileName: string, hash: string, architecture: string, licence: string, processing: ModelProcessing, commercial = true): ModelPreset => ({
  name,
  fileName,
  hash,
  architecture,
  licence,
  commercial,
  source: `${REMBG_RELEASE}/${fileName}`,
  processing,
});

/** Every preset, the bundled default first. */
export const MODEL_PRESETS: readonly ModelPreset[] = Object.freeze([
  {
    name: 'isnet',
    fileName: 'isnet-medium-fe1b9f06.onnx',
    hash: 'sha256:b6e8497ba978a6f5fbb647e419d2696cd80df5a23cb6a8ea532021911bd76acb',
    architecture: 'IS-Net (DIS), float16',
    licence: 'AGPL-3.0 (@imgly/background-removal-data)',
    commercial: true,
    source: 'bundled: @imgly/background-removal-data, /models/medium',
    bundled: 'medium',
    processing: ISNET_PROCESSING,
  },
  {
    name: 'isnet-small',
    fileName: 'isnet-small-b34a3e93.onnx',
    hash: 'sha256:7001d60734fdc112dd9c062635fb59cd401fb82a9d4213134bce4dbd655c803a',
    architecture: 'IS-Net (DIS), quantized by imgly',
    licence: 'AGPL-3.0 (@imgly/background-removal-data)',
    commercial: true,
    source: 'bundled: @imgly/background-removal-data, /models/small',
    bundled: 'small',
    processing: ISNET_PROCESSING,
  },
  // The DIS reference (xuebinqin/DIS, isnet inference): x / 255 − 0.5, sigmoid inside the model.
  rembg('isnet-general-use', 'isnet-general-use.onnx', 'md5:fc16ebd8b0c10d971d3513d564d01e29', 'IS-Net (DIS)', 'Apache-2.0', {
    ...ISNET_PROCESSING,
    scale: 255,
  }),
  // SkyTNT/anime-segmentation's inference: x / 255 with no mean taken off (rembg takes
  // ImageNet's mean off); its export applies the sigmoid inside the graph.
  rembg('isnet-anime', 'isnet-anime.onnx', 'md5:6f184e756bb3bd901c8849220a83e38e', 'IS-Net (anime-segmentation)', 'Apache-2.0', {
    inputSize: 1024,
    scale: 255,
    mean: [0, 0, 0],
    std: [1, 1, 1],
    outputIndex: 0,
    activation: 'none',
  }),
  // U²-Net's first output (d0) is already a sigmoid; the reference, like rembg, divides by the
  // picture's maximum and stretches the output, which Cutout does not (see the file comment).
  rembg('u2net', 'u2net.onnx', 'md5:60024c5c889badc19c04ad937298a77b', 'U²-Net', 'Apache-2.0', U2NET),
  rembg('u2netp', 'u2netp.onnx', 'md5:8e83ca70e441ab06c318d82300c84806', 'U²-Netp (small U²-Net)', 'Apache-2.0', U2NET),
  rembg('u2net_human_seg', 'u2net_human_seg.onnx', 'md5:c09ddc2e0104f800e3e1bb4652583d1f', 'U²-Net (people)', 'Apache-2.0', U2NET),
  rembg('silueta', 'silueta.onnx', 'md5:55e59e0d8062d2f5d013f4725ee84782', 'U²-Net (pruned by rembg)', 'MIT (rembg)', U2NET),
  // BiRefNet's inference (ZhengPeng7/BiRefNet): ImageNet-normalised x / 255, sigmoid on the logits.
  rembg('birefnet-general', 'BiRefNet-general-epoch_244.onnx', 'md5:7a35a0141cbbc80de11d9c9a28f52697', 'BiRefNet (Swin-L)', 'MIT', BIREFNET),
  rembg('birefnet-general-lite', 'BiRefNet-general-bb_swin_v1_tiny-epoch_232.onnx', 'md5:4fab47adc4ff364be1713e97b7e66334', 'BiRefNet (Swin-T)', 'MIT', BIREFNET),
  rembg('birefnet-portrait', 'BiRefNet-portrait-epoch_150.onnx', 'md5:c3a64a6abf20250d090cd055f12a3b67', 'BiRefNet (Swin-L, portraits)', 'MIT', BIREFNET),
  rembg('birefnet-dis', 'BiRefNet-DIS-epoch_590.onnx', 'md5:2d4d44102b446f33a4ebb2e56c051f2b', 'BiRefNet (Swin-L, DIS5K)', 'MIT', BIREFNET),
  rembg('birefnet-hrsod', 'BiRefNet-HRSOD_DHU-epoch_115.onnx', 'md5:c017ade5de8a50ff0fd74d790d268dda', 'BiRefNet (Swin-L, HRSOD)', 'MIT', BIREFNET),
  rembg('birefnet-cod', 'BiRefNet-COD-epoch_125.onnx', 'md5:f6d0d21ca89d287f17e7afe9f5fd3b45', 'BiRefNet (Swin-L, camouflage)', 'MIT', BIREFNET),
  rembg('birefnet-massive', 'BiRefNet-massive-TR_DIS5K_TR_TEs-epoch_420.onnx', 'md5:33e726a2136a3d59eb0fdf613e31e3e9', 'BiRefNet (Swin-L, massive data)', 'MIT', BIREFNET),
  // BRIA's reference applies a sigmoid to the PyTorch model's last output; rembg applies none
  // to this ONNX file (the export carries it), so neither does Cutout.
  rembg(
    'bria-rmbg',
    'bria-rmbg-2.0.onnx',
    'sha256:5b486f08200f513f460da46dd701db5fbb47d79b4be4b708a19444bcd4e79958',
    'BiRefNet (BRIA RMBG-2.0)',
    'CC BY-NC 4.0',
    { ...BIREFNET, activation: 'none' },
    false,
  ),
]);

/** The preset of that name, or undefined. */
export function findPreset(name: string): ModelPreset | undefined {
  return MODEL_PRESETS.find((preset) => preset.name === name);
}

/** What a model's name may be: the preset names, and those `cutout models add` accepts. */
export const MODEL_NAME = /^[a-z0-9][a-z0-9._-]{0,63}$/;

/** The bundled default's name: what `CUTOUT_MODELS` loads when it is unset. */
export const DEFAULT_MODEL = 'isnet';

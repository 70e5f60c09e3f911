/**
 * The open background-removal models Cutout knows by name: one table of what each file is
 * (its hash, where its publisher offers it, its size, its licence) and how to run it
 * ({@link ModelProcessing}). `cutout models add NAME FILE` checks a file against its row;
 * docs/models.md is checked against this table by test/docs.test.ts, and says where each
 * fact was read ("Where each fact comes from").
 *
 * The hashes of the files rembg publishes are the ones rembg itself checks
 * (danielgatis/rembg, rembg/sessions/*.py). The input and output handling is each model's
 * reference code's, read in its own repository (the comments below name the file). Cutout
 * keeps one rule where the references disagree among themselves: pixels are divided by 255
 * (U²-Net's test script, and rembg for every model, divide by the picture's brightest value,
 * which is the same thing for any picture with one channel at 255), and the output is taken as
 * it is, never stretched to span 0..1 (DIS's and U²-Net's test scripts, and rembg, stretch it,
 * which turns a picture with no subject into a full-strength mask).
 */

import { IMAGENET, ISNET_PROCESSING, type ModelProcessing } from './model-processing.js';

/** One named model: its file, its provenance and how to run it. */
export interface ModelPreset {
  name: string;
  /** The file name its publisher gives it. */
  fileName: string;
  /** `md5:…` or `sha256:…` of the file, as its publisher's checks state it. */
  hash: string;
  /**
   * The file's size in megabytes (10⁶ bytes), as a public listing of it gives it: what the
   * operator downloads and what it takes on disk once installed. docs/models.md names the
   * listing of each and says which are of an equivalent export rather than of this very file.
   */
  megabytes: number;
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

const rembg = (name: string, fileName: string, hash: string, megabytes: number, architecture: string, licence: string, processing: ModelProcessing, commercial = true): ModelPreset => ({
  name,
  fileName,
  hash,
  megabytes,
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
    megabytes: 88.2,
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
    megabytes: 44.3,
    architecture: 'IS-Net (DIS), quantized by imgly',
    licence: 'AGPL-3.0 (@imgly/background-removal-data)',
    commercial: true,
    source: 'bundled: @imgly/background-removal-data, /models/small',
    bundled: 'small',
    processing: ISNET_PROCESSING,
  },
  // xuebinqin/DIS, IS-Net/Inference.py: stretched to 1024², x / 255 − 0.5 (std 1), output 0;
  // IS-Net/models/isnet.py returns sigmoids. rembg (dis_general_use.py) agrees.
  rembg('isnet-general-use', 'isnet-general-use.onnx', 'md5:fc16ebd8b0c10d971d3513d564d01e29', 179, 'IS-Net (DIS)', 'Apache-2.0', {
    ...ISNET_PROCESSING,
    scale: 255,
  }),
  // SkyTNT/anime-segmentation, inference.py get_mask: x / 255, no mean taken off, letterboxed
  // (fitted into the square, padded with 0, centred) at 1024²; export.py exports
  // AnimeSegmentation, whose forward (train.py) ends in `.sigmoid()`: probabilities, output 0.
  // rembg (dis_anime.py) takes ImageNet's mean off with std 1 and stretches; Cutout follows
  // the reference, letterbox included.
  rembg('isnet-anime', 'isnet-anime.onnx', 'md5:6f184e756bb3bd901c8849220a83e38e', 176, 'IS-Net (anime-segmentation)', 'Apache-2.0', {
    inputSize: 1024,
    scale: 255,
    mean: [0, 0, 0],
    std: [1, 1, 1],
    outputIndex: 0,
    activation: 'none',
    fit: 'letterbox',
  }),
  // xuebinqin/U-2-Net, u2net_test.py with data_loader.py RescaleT(320) + ToTensorLab(flag=0):
  // stretched to 320², x / max − ImageNet mean, / ImageNet std; model/u2net.py returns
  // sigmoids, d0 first. rembg (u2net.py, u2netp.py, u2net_human_seg.py, silueta.py) agrees.
  rembg('u2net', 'u2net.onnx', 'md5:60024c5c889badc19c04ad937298a77b', 176, 'U²-Net', 'Apache-2.0', U2NET),
  rembg('u2netp', 'u2netp.onnx', 'md5:8e83ca70e441ab06c318d82300c84806', 4.57, 'U²-Netp (small U²-Net)', 'Apache-2.0', U2NET),
  rembg('u2net_human_seg', 'u2net_human_seg.onnx', 'md5:c09ddc2e0104f800e3e1bb4652583d1f', 176, 'U²-Net (people)', 'Apache-2.0', U2NET),
  rembg('silueta', 'silueta.onnx', 'md5:55e59e0d8062d2f5d013f4725ee84782', 44.2, 'U²-Net (pruned by rembg)', 'MIT (rembg)', U2NET),
  // ZhengPeng7/BiRefNet, tutorials/BiRefNet_pth2onnx.ipynb: Resize((1024, 1024)), ToTensor,
  // ImageNet Normalize; the ONNX output is logits (the notebook, like inference.py, applies
  // `.sigmoid()` to the last output). models/birefnet.py has returned only the final map in
  // eval mode since its commit of 2024-08-18, before rembg took these files (2024-08-26), so
  // the last output is output 0. rembg (birefnet_general.py) agrees.
  rembg('birefnet-general', 'BiRefNet-general-epoch_244.onnx', 'md5:7a35a0141cbbc80de11d9c9a28f52697', 972.7, 'BiRefNet (Swin-L)', 'MIT', BIREFNET),
  rembg('birefnet-general-lite', 'BiRefNet-general-bb_swin_v1_tiny-epoch_232.onnx', 'md5:4fab47adc4ff364be1713e97b7e66334', 224, 'BiRefNet (Swin-T)', 'MIT', BIREFNET),
  rembg('birefnet-portrait', 'BiRefNet-portrait-epoch_150.onnx', 'md5:c3a64a6abf20250d090cd055f12a3b67', 972.7, 'BiRefNet (Swin-L, portraits)', 'MIT', BIREFNET),
  rembg('birefnet-dis', 'BiRefNet-DIS-epoch_590.onnx', 'md5:2d4d44102b446f33a4ebb2e56c051f2b', 972.7, 'BiRefNet (Swin-L, DIS5K)', 'MIT', BIREFNET),
  rembg('birefnet-hrsod', 'BiRefNet-HRSOD_DHU-epoch_115.onnx', 'md5:c017ade5de8a50ff0fd74d790d268dda', 972.7, 'BiRefNet (Swin-L, HRSOD)', 'MIT', BIREFNET),
  rembg('birefnet-cod', 'BiRefNet-COD-epoch_125.onnx', 'md5:f6d0d21ca89d287f17e7afe9f5fd3b45', 972.7, 'BiRefNet (Swin-L, camouflage)', 'MIT', BIREFNET),
  rembg('birefnet-massive', 'BiRefNet-massive-TR_DIS5K_TR_TEs-epoch_420.onnx', 'md5:33e726a2136a3d59eb0fdf613e31e3e9', 972.7, 'BiRefNet (Swin-L, massive data)', 'MIT', BIREFNET),
  // briaai/RMBG-2.0's model card: the BiRefNet transforms (1024², ImageNet) and
  // `model(x)[-1].sigmoid()` on the PyTorch model. rembg (bria_rmbg.py) applies no sigmoid to
  // its ONNX file, the one whose hash is below; whether that export carries the sigmoid could
  // not be read from a published graph. `none` is the safe side: were the output logits, the
  // mask would be cut hard at 0.5, not squashed into 0.5..0.73 as a second sigmoid would.
  rembg(
    'bria-rmbg',
    'bria-rmbg-2.0.onnx',
    'sha256:5b486f08200f513f460da46dd701db5fbb47d79b4be4b708a19444bcd4e79958',
    1020,
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

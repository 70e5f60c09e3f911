import { describe, expect, it } from 'vitest';
import { assertProviderAvailable, PROVIDER_UNAVAILABLE } from '../../src/model/execution-provider.js';
import { MODEL_PRESETS } from '../../src/model/model-presets.js';
import { assertProcessing, IMAGENET, ISNET_PROCESSING } from '../../src/model/model-processing.js';
import { channelTables, toModelTensor, toProbabilities } from '../../src/model/model-tensor.js';

const picture = { data: Uint8Array.from({ length: 4 * 4 * 3 }, (_, i) => (i * 37) % 256), width: 4, height: 4, channels: 3 as const };

describe('model tensor', () => {
  it("IS-Net's processing writes planar RGB normalised as IS-Net was trained, (x − 128) / 256", () => {
    const image = { data: Uint8Array.from([0, 128, 255, 64, 192, 1]), width: 2, height: 1, channels: 3 as const };
    expect([...toModelTensor(image, channelTables(ISNET_PROCESSING))]).toEqual([-0.5, -0.25, 0, 0.25, 0.49609375, -0.49609375]);
    const plane = picture.width * picture.height;
    const reference = Float32Array.from({ length: 3 * plane }, (_, i) => (picture.data[(i % plane) * 3 + Math.floor(i / plane)] - 128) / 256);
    expect(Buffer.from(toModelTensor(picture, channelTables(ISNET_PROCESSING)).buffer).equals(Buffer.from(reference.buffer))).toBe(true);
  });

  it('fills a buffer it is given, overwriting what was there, and refuses one of the wrong length', () => {
    const image = { data: Uint8Array.from([0, 128, 255, 64, 192, 1]), width: 2, height: 1, channels: 3 as const };
    const reused = new Float32Array(6).fill(7);
    expect(toModelTensor(image, channelTables(ISNET_PROCESSING), reused)).toBe(reused);
    expect([...reused]).toEqual([-0.5, -0.25, 0, 0.25, 0.49609375, -0.49609375]);
    expect(() => toModelTensor(image, channelTables(ISNET_PROCESSING), new Float32Array(5))).toThrow('expected 6');
  });

  it('normalises each channel with its own mean and std, planar', () => {
    const tensor = toModelTensor(picture, channelTables({ ...ISNET_PROCESSING, scale: 255, ...IMAGENET }));
    for (const [p, c] of [[0, 0], [5, 1], [15, 2]]) {
      expect(tensor[c * 16 + p]).toBeCloseTo((picture.data[p * 3 + c] / 255 - IMAGENET.mean[c]) / IMAGENET.std[c], 6);
    }
  });

  it('reads the first channel of the output, through the sigmoid for logits, and refuses an output of another size', () => {
    const logits = Float32Array.from([0, 2, -2, 40, 9, 9, 9, 9]);
    expect([...toProbabilities(logits.slice(), [1, 2, 2, 2], 2, { activation: 'none' }, 'o')]).toEqual([0, 2, -2, 40]);
    const p = toProbabilities(logits.slice(), [1, 2, 2, 2], 2, { activation: 'sigmoid' }, 'o');
    expect([...p].map((v) => Number(v.toFixed(4)))).toEqual([0.5, 0.8808, 0.1192, 1]);
    expect(() => toProbabilities(logits, [1, 2, 4], 2, { activation: 'none' }, 'mask')).toThrow('model output mask has shape [1, 2, 4], expected [1, C, 2, 2]');
  });
});

describe('presets', () => {
  it('every preset has a processing a model thread can run, a known hash kind and a unique name', () => {
    for (const preset of MODEL_PRESETS) {
      expect(() => assertProcessing(preset.processing), preset.name).not.toThrow();
      expect(preset.hash).toMatch(/^(md5:[0-9a-f]{32}|sha256:[0-9a-f]{64})$/);
    }
    expect(new Set(MODEL_PRESETS.map((preset) => preset.name)).size).toBe(MODEL_PRESETS.length);
  });

  it('a processing that cannot drive a model is refused, naming the field', () => {
    expect(() => assertProcessing({ ...ISNET_PROCESSING, std: [1, 0, 1] })).toThrow('std 1,0,1 is not three positive numbers');
    expect(() => assertProcessing({ ...ISNET_PROCESSING, inputSize: 10.5 })).toThrow('input size 10.5');
  });
});

describe('execution provider', () => {
  const linux = [
    { name: 'cpu', bundled: true },
    { name: 'webgpu', bundled: true },
    { name: 'cuda', bundled: false },
  ];
  const refused = (provider: string, exists: (path: string) => boolean) => {
    try {
      assertProviderAvailable(provider, linux, '/ort/bin', exists);
      return undefined;
    } catch (error) {
      return error as Error & { code?: string };
    }
  };

  it('cpu always; a bundled one as offered; an unbundled one only with its libraries', () => {
    expect(refused('cpu', () => false)).toBeUndefined();
    expect(refused('webgpu', () => false)).toBeUndefined();
    expect(refused('cuda', () => true)).toBeUndefined();
    const cuda = refused('cuda', (path) => path.endsWith('shared.so'));
    expect(cuda?.code).toBe(PROVIDER_UNAVAILABLE);
    expect(cuda?.message).toContain('libonnxruntime_providers_cuda.so missing from /ort/bin');
    expect(cuda?.message).toContain('ONNXRUNTIME_NODE_INSTALL=cuda12');
    expect(refused('dml', () => true)?.message).toContain('offers cpu, webgpu, cuda');
  });
});

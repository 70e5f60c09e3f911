import { readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { assembleModel, MASK_OUTPUT } from '../src/model/assemble-model.js';
import * as onnx from '../src/model/onnx-fields.js';
import { openModel } from '../src/model/quantize/onnx-graph.js';

// The form of the bundled model a GPU runs (CUTOUT_EXECUTION_PROVIDER=webgpu): the package's
// float16 weights as shipped, with the mask as the only output. The shipped file lists the
// Casts of its float16 conversion before the nodes they read, so pruning the other outputs
// must follow the graph, not the file's order, to keep the mask's whole path.

describe('the bundled model in float16', () => {
  it('keeps every weight in float16 and every node the mask needs, and nothing else', { timeout: 120_000 }, async () => {
    const dir = join(tmpdir(), 'cutout-test-model');
    const shipped = openModel(await readFile(await assembleModel(dir, { rewrite: false })));
    const fp16 = openModel(await readFile(await assembleModel(dir, { form: 'fp16' })));
    expect(shipped.outputs.length).toBeGreaterThan(1);
    expect(fp16.outputs).toEqual([MASK_OUTPUT]);
    expect(fp16.inputs).toEqual(shipped.inputs);
    expect(fp16.nodes.length).toBeLessThan(shipped.nodes.length);

    // Every input of every node is made by another node, a weight or the graph's input.
    const made = new Set([...fp16.inputs, ...fp16.initializers.keys(), ...fp16.nodes.flatMap((node) => node.outputs)]);
    expect(fp16.nodes.flatMap((node) => node.inputs).filter((name) => name && !made.has(name))).toEqual([]);
    // The mask is the Sigmoid of the last Resize, cast back to float32 for the graph's output.
    const producer = new Map(fp16.nodes.flatMap((node) => node.outputs.map((output) => [output, node] as const)));
    const cast = producer.get(MASK_OUTPUT)!;
    expect(cast.opType).toBe('Cast');
    expect(producer.get(cast.inputs[0])?.opType).toBe('Sigmoid');

    const types = new Set([...fp16.initializers.values()].filter((tensor) => tensor.dims.length === 4).map((tensor) => tensor.dataType));
    expect(types).toEqual(new Set([onnx.FLOAT16]));
  });
});

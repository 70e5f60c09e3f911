/**
 * Run as a child process by test/onnx-runtime-files.test.ts: creates and runs model sessions
 * the ways Cutout does (the precision probe, then a segmenter on a small model of IS-Net's
 * shape, `[1,3,32,32]` in and `[1,1,32,32]` out), in a process of its own, so that whatever
 * ONNX Runtime writes at its first session is this process's, then prints its pid.
 */
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import * as onnx from '../../src/model/onnx-fields.js';
import { lengthDelimitedField, stringField, varintField } from '../../src/model/onnx-wire.js';
import { loadSegmenter } from '../../src/model/onnx-segmenter.js';
import { ISNET_PROCESSING } from '../../src/model/model-processing.js';
import { runPrecisionProbe } from '../../src/model/precision.js';
import { floatValueInfo, intAttribute, intsAttribute, tensorOf, writeModel, type EditableModel } from '../../src/model/quantize/onnx-graph.js';
import { seeded } from '../../src/model/quantize/probe-models.js';

const SIZE = 32;
const [dir] = process.argv.slice(2);
if (!dir) throw new Error('usage: model-sessions-child.ts DIR');

const model: EditableModel = {
  nodes: [
    { opType: 'Conv', name: 'conv', inputs: ['x', 'w', 'b'], outputs: ['logits'], rest: [intAttribute('group', 1), intsAttribute('pads', [1, 1, 1, 1])] },
    { opType: 'Sigmoid', name: 'sigmoid', inputs: ['logits'], outputs: ['y'], rest: [] },
  ],
  initializers: new Map(),
  inputs: ['x'],
  outputs: ['y'],
  graphFields: [stringField(2, 'tiny-segmenter'), floatValueInfo(onnx.GRAPH_INPUT, 'x', [1, 3, SIZE, SIZE]), floatValueInfo(onnx.GRAPH_OUTPUT, 'y', [1, 1, SIZE, SIZE])],
  modelFields: [varintField(1, 8), lengthDelimitedField(onnx.MODEL_OPSET_IMPORT, varintField(onnx.OPSET_VERSION, 15))],
};
const path = join(dir, 'tiny-segmenter.onnx');
await writeFile(path, writeModel(model, model.nodes, [tensorOf('w', onnx.FLOAT, [1, 3, 3, 3], seeded(27, 0.1, 1)), tensorOf('b', onnx.FLOAT, [1], seeded(1, 0.1, 2))]));

await runPrecisionProbe({ threads: 1, runs: 1 });
const segmenter = await loadSegmenter(path, { threads: 1, processing: { ...ISNET_PROCESSING, inputSize: SIZE } });
const [mask] = await segmenter.segment([{ data: new Uint8Array(SIZE * SIZE * 3).fill(128), width: SIZE, height: SIZE, channels: 3 }]);
await segmenter.close();
if (mask.width !== SIZE || mask.height !== SIZE) throw new Error(`the mask is ${mask.width}×${mask.height}`);
console.log(process.pid);

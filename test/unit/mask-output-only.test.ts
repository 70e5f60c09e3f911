import { describe, expect, it } from 'vitest';
import { keepOnlyOutput } from '../../src/model/mask-output-only.js';
import { fieldText, lengthDelimitedField, payloadOf, readFields, stringField, varintField } from '../../src/model/onnx-wire.js';

// onnx.proto: ModelProto.ir_version 1, .graph 7; GraphProto.node 1, .name 2, .initializer 5,
// .input 11, .output 12; NodeProto.input 1, .output 2, .op_type 4, .attribute 5;
// AttributeProto.name 1, .g 6; TensorProto.name 8; ValueInfoProto.name 1.
const node = (op: string, inputs: string[], outputs: string[], ...extra: Uint8Array[]) =>
  lengthDelimitedField(1, Buffer.concat([...inputs.map((n) => stringField(1, n)), ...outputs.map((n) => stringField(2, n)), stringField(4, op), ...extra]));
const initializer = (name: string) => lengthDelimitedField(5, stringField(8, name));
const valueInfo = (field: number, name: string) => lengthDelimitedField(field, stringField(1, name));
const model = (...graph: Uint8Array[]) => Buffer.concat([varintField(1, 8), lengthDelimitedField(7, Buffer.concat([stringField(2, 'g'), ...graph]))]);

function describeGraph(bytes: Uint8Array) {
  const graph = readFields(payloadOf(readFields(bytes).find((f) => f.number === 7)!));
  const named = (number: number, nameField: number) =>
    graph.filter((f) => f.number === number).map((f) => fieldText(readFields(payloadOf(f)).find((g) => g.number === nameField)));
  return { ops: named(1, 4), initializers: named(5, 8), inputs: named(11, 1), outputs: named(12, 1) };
}

// An IS-Net in miniature: a trunk, the mask from it, and a side output with a weight of its own.
const twoOutputs = model(
  valueInfo(11, 'image'),
  initializer('trunk.w'),
  initializer('mask.w'),
  initializer('side.w'),
  node('Conv', ['image', 'trunk.w'], ['features']),
  node('Conv', ['features', 'mask.w'], ['logits']),
  node('Sigmoid', ['logits'], ['output']),
  node('Conv', ['features', 'side.w'], ['side_logits']),
  node('Resize', ['side_logits', '', 'scales'], ['side_up']),
  node('Sigmoid', ['side_up'], ['side']),
  valueInfo(12, 'output'),
  valueInfo(12, 'side'),
);

describe('keepOnlyOutput', () => {
  it('keeps the output, the nodes and weights it needs, and nothing only the other output needed', () => {
    const { model: pruned, droppedNodes } = keepOnlyOutput(twoOutputs, 'output');
    expect(droppedNodes).toBe(3);
    expect(describeGraph(pruned)).toEqual({ ops: ['Conv', 'Conv', 'Sigmoid'], initializers: ['trunk.w', 'mask.w'], inputs: ['image'], outputs: ['output'] });
    // Fields outside the graph (ir_version) are kept as they were.
    expect(readFields(pruned)[0].bytes).toEqual(readFields(twoOutputs)[0].bytes);
  });

  it('can keep the other output instead', () => {
    expect(describeGraph(keepOnlyOutput(twoOutputs, 'side').model).ops).toEqual(['Conv', 'Conv', 'Resize', 'Sigmoid']);
  });

  it('returns the model unchanged when there is nothing to drop, no such output, or a subgraph it cannot follow', () => {
    const once = keepOnlyOutput(twoOutputs, 'output').model;
    expect(keepOnlyOutput(once, 'output')).toEqual({ model: once, droppedNodes: 0 });
    expect(keepOnlyOutput(twoOutputs, 'missing')).toEqual({ model: twoOutputs, droppedNodes: 0 });
    const withIf = model(
      valueInfo(11, 'image'),
      node('Conv', ['image'], ['output']),
      node('If', ['cond'], ['side'], lengthDelimitedField(5, Buffer.concat([stringField(1, 'then_branch'), lengthDelimitedField(6, stringField(2, 'then'))]))),
      valueInfo(12, 'output'),
      valueInfo(12, 'side'),
    );
    expect(keepOnlyOutput(withIf, 'output')).toEqual({ model: withIf, droppedNodes: 0 });
  });
});

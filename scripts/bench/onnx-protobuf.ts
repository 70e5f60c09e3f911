/**
 * Just enough of the ONNX schema to read the parts of a model the benchmark needs (graph,
 * nodes, attributes, initializer shapes, value infos) and to write tiny models. Field numbers
 * are those of onnx/onnx.proto3; the wire format itself is src/model/onnx-wire.ts. Tensor
 * payloads are skipped, never decoded, so an 88 MB model is walked in a few milliseconds
 * without copying its weights.
 */

import {
  fieldText,
  lengthDelimitedField,
  payloadOf,
  readFields,
  readVarints,
  stringField,
  varintField,
  varintOf,
  type WireField,
} from '../../src/model/onnx-wire.js';

/** int64 as a JS number; protobuf stores negatives as 64-bit two's complement. */
const int64 = (value: bigint) => Number(BigInt.asIntN(64, value));

/** A repeated int64 field, which writers may send packed or one by one. */
function int64List(field: WireField, into: number[]): void {
  for (const value of readVarints(field)) into.push(int64(value));
}

/** A node attribute; only the kinds the benchmark reads are kept. */
export interface OnnxAttribute {
  name: string;
  i?: number;
  f?: number;
  s?: string;
  ints: number[];
}

export interface OnnxNode {
  name: string;
  opType: string;
  domain: string;
  inputs: string[];
  outputs: string[];
  attributes: Map<string, OnnxAttribute>;
}

/** A tensor's name, element type and dimensions, without its data. */
export interface OnnxTensorInfo {
  name: string;
  /** ONNX TensorProto.DataType: 1 float32, 10 float16, 7 int64, … */
  dataType: number;
  /** -1 for a symbolic or unknown dimension. */
  dims: number[];
}

export interface OnnxGraph {
  nodes: OnnxNode[];
  initializers: Map<string, OnnxTensorInfo>;
  inputs: OnnxTensorInfo[];
  outputs: OnnxTensorInfo[];
  /** Shapes the exporter recorded for intermediate tensors (often none). */
  valueInfo: Map<string, OnnxTensorInfo>;
}

export interface OnnxModel {
  irVersion: number;
  opsets: { domain: string; version: number }[];
  graph: OnnxGraph;
}

function readAttribute(bytes: Uint8Array): OnnxAttribute {
  const attribute: OnnxAttribute = { name: '', ints: [] };
  for (const field of readFields(bytes)) {
    if (field.number === 1) attribute.name = fieldText(field);
    else if (field.number === 2) attribute.f = Buffer.from(payloadOf(field)).readFloatLE(0);
    else if (field.number === 3) attribute.i = int64(varintOf(field));
    else if (field.number === 4) attribute.s = fieldText(field);
    else if (field.number === 8) int64List(field, attribute.ints);
  }
  return attribute;
}

function readNode(bytes: Uint8Array): OnnxNode {
  const node: OnnxNode = { name: '', opType: '', domain: '', inputs: [], outputs: [], attributes: new Map() };
  for (const field of readFields(bytes)) {
    if (field.number === 1) node.inputs.push(fieldText(field));
    else if (field.number === 2) node.outputs.push(fieldText(field));
    else if (field.number === 3) node.name = fieldText(field);
    else if (field.number === 4) node.opType = fieldText(field);
    else if (field.number === 5) {
      const attribute = readAttribute(payloadOf(field));
      node.attributes.set(attribute.name, attribute);
    } else if (field.number === 7) node.domain = fieldText(field);
  }
  return node;
}

function readTensorInfo(bytes: Uint8Array): OnnxTensorInfo {
  const tensor: OnnxTensorInfo = { name: '', dataType: 0, dims: [] };
  for (const field of readFields(bytes)) {
    if (field.number === 1) int64List(field, tensor.dims);
    else if (field.number === 2) tensor.dataType = Number(varintOf(field));
    else if (field.number === 8) tensor.name = fieldText(field);
  }
  return tensor;
}

/** ValueInfoProto → TypeProto (2) → tensor_type (1) → elem_type (1), shape (2) → dim (1) → dim_value (1). */
function readValueInfo(bytes: Uint8Array): OnnxTensorInfo {
  const info: OnnxTensorInfo = { name: '', dataType: 0, dims: [] };
  for (const field of readFields(bytes)) {
    if (field.number === 1) info.name = fieldText(field);
    if (field.number !== 2) continue;
    for (const type of readFields(payloadOf(field))) {
      if (type.number !== 1) continue;
      for (const tensor of readFields(payloadOf(type))) {
        if (tensor.number === 1) info.dataType = Number(varintOf(tensor));
        if (tensor.number !== 2) continue;
        for (const dim of readFields(payloadOf(tensor))) {
          if (dim.number !== 1) continue;
          let value = -1;
          for (const part of readFields(payloadOf(dim))) if (part.number === 1) value = int64(varintOf(part));
          info.dims.push(value);
        }
      }
    }
  }
  return info;
}

function readGraph(bytes: Uint8Array): OnnxGraph {
  const graph: OnnxGraph = { nodes: [], initializers: new Map(), inputs: [], outputs: [], valueInfo: new Map() };
  for (const field of readFields(bytes)) {
    if (field.number === 1) graph.nodes.push(readNode(payloadOf(field)));
    else if (field.number === 5) {
      const tensor = readTensorInfo(payloadOf(field));
      graph.initializers.set(tensor.name, tensor);
    } else if (field.number === 11) graph.inputs.push(readValueInfo(payloadOf(field)));
    else if (field.number === 12) graph.outputs.push(readValueInfo(payloadOf(field)));
    else if (field.number === 13) {
      const info = readValueInfo(payloadOf(field));
      graph.valueInfo.set(info.name, info);
    }
  }
  return graph;
}

/**
 * Reads the structure of an ONNX model: nodes with their attributes, the shapes of the
 * initializers (weights), of the graph's inputs and outputs and of any recorded value infos.
 *
 * @example const { graph } = readOnnxModel(await readFile('data/models/isnet-medium-fe1b9f06.onnx'))
 */
export function readOnnxModel(bytes: Uint8Array): OnnxModel {
  const model: OnnxModel = { irVersion: 0, opsets: [], graph: { nodes: [], initializers: new Map(), inputs: [], outputs: [], valueInfo: new Map() } };
  for (const field of readFields(bytes)) {
    if (field.number === 1) model.irVersion = int64(varintOf(field));
    else if (field.number === 7) model.graph = readGraph(payloadOf(field));
    else if (field.number === 8) {
      const opset = { domain: '', version: 0 };
      for (const part of readFields(payloadOf(field))) {
        if (part.number === 1) opset.domain = fieldText(part);
        if (part.number === 2) opset.version = int64(varintOf(part));
      }
      model.opsets.push(opset);
    }
  }
  return model;
}

// ---- writing ----

/** One protobuf field, ready to concatenate with others into a message. */
export type Encoded = Uint8Array;

const concat = (parts: Encoded[]) => Buffer.concat(parts);

/** A float32 ValueInfoProto with a fixed shape (an empty shape still says "float tensor"). */
export function encodeValueInfo(name: string, dims: number[] | undefined): Encoded {
  const dimFields = (dims ?? []).map((d) => lengthDelimitedField(1, varintField(1, d)));
  const tensorType = concat([varintField(1, 1), ...(dims ? [lengthDelimitedField(2, concat(dimFields))] : [])]);
  return concat([stringField(1, name), lengthDelimitedField(2, lengthDelimitedField(1, tensorType))]);
}

/** A NodeProto with no attributes. */
export function encodeNode(opType: string, inputs: string[], outputs: string[], name = opType): Encoded {
  return concat([...inputs.map((i) => stringField(1, i)), ...outputs.map((o) => stringField(2, o)), stringField(3, name), stringField(4, opType)]);
}

/**
 * A whole ModelProto: IR version 8, default-domain opset `opset`, one graph.
 *
 * @example encodeModel({ nodes: [encodeNode('MatMul', ['A', 'B'], ['C'])], inputs: [...], outputs: [...] })
 */
export function encodeModel(graph: { nodes: Encoded[]; inputs: Encoded[]; outputs: Encoded[] }, opset = 13): Uint8Array {
  const graphBytes = concat([
    ...graph.nodes.map((n) => lengthDelimitedField(1, n)),
    stringField(2, 'bench'),
    ...graph.inputs.map((i) => lengthDelimitedField(11, i)),
    ...graph.outputs.map((o) => lengthDelimitedField(12, o)),
  ]);
  return concat([varintField(1, 8), stringField(2, 'cutout-bench'), lengthDelimitedField(7, graphBytes), lengthDelimitedField(8, varintField(2, opset))]);
}

/**
 * The same model with more graph outputs, so a run returns intermediate tensors too. The
 * outputs carry only their names: ONNX Runtime takes their types from the nodes that write
 * them (float16 or float32 alike). Protobuf merges repeated fields across occurrences of a
 * message field, so the new outputs are sent as a second `graph` field holding only them.
 */
export function withExtraOutputs(model: Uint8Array, names: string[]): Uint8Array {
  const outputs = concat(names.map((name) => lengthDelimitedField(12, stringField(1, name))));
  return concat([model, lengthDelimitedField(7, outputs)]);
}

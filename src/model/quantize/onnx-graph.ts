/**
 * A model's graph as a list of nodes that a rewrite can edit, on the protobuf wire format
 * (../onnx-wire.ts) like Cutout's other rewrites: a node's inputs, outputs and op type are
 * read; its attributes, domain and doc string stay the bytes they were and are written back
 * as they stood. Weights are views into the model file, never copied until written.
 */

import * as onnx from '../onnx-fields.js';
import { encodeVarint, fieldText, lengthDelimitedField, payloadOf, readFields, readVarints, stringField, varintField, type WireField } from '../onnx-wire.js';

/** One NodeProto: what a rewrite reads and changes, and the rest as it stood. */
export interface GraphNode {
  opType: string;
  name: string;
  inputs: string[];
  outputs: string[];
  /** The node's other fields (attributes, domain, doc string), each a whole field. */
  rest: Uint8Array[];
}

/** One initializer (TensorProto). */
export interface GraphTensor {
  name: string;
  dataType: number;
  dims: number[];
  /** The little-endian values, a view into the model file (raw_data). */
  raw: Uint8Array;
}

/** A model opened for rewriting: the graph's nodes and weights, and what surrounds them. */
export interface EditableModel {
  nodes: GraphNode[];
  initializers: Map<string, GraphTensor>;
  /** Names of the graph's inputs and outputs. */
  inputs: string[];
  outputs: string[];
  /** The graph's name, inputs and outputs, kept as they stood (value_info is dropped: ONNX Runtime infers shapes on load). */
  graphFields: Uint8Array[];
  /** The model's fields other than its graph (IR version, opsets, producer, …). */
  modelFields: Uint8Array[];
}

function readNode(bytes: Uint8Array): GraphNode {
  const node: GraphNode = { opType: '', name: '', inputs: [], outputs: [], rest: [] };
  for (const field of readFields(bytes)) {
    if (field.number === onnx.NODE_INPUT) node.inputs.push(fieldText(field));
    else if (field.number === onnx.NODE_OUTPUT) node.outputs.push(fieldText(field));
    else if (field.number === onnx.NODE_OP_TYPE) node.opType = fieldText(field);
    else if (field.number === onnx.NODE_NAME) node.name = fieldText(field);
    else node.rest.push(field.bytes);
  }
  return node;
}

function readTensor(fields: WireField[]): GraphTensor {
  const raw = fields.find((f) => f.number === onnx.TENSOR_RAW_DATA);
  const name = fieldText(fields.find((f) => f.number === onnx.TENSOR_NAME));
  if (!raw) throw new Error(`initializer ${name} keeps its values outside raw_data, which the int8 rewrite does not read`);
  return {
    name,
    dataType: Number(fields.find((f) => f.number === onnx.TENSOR_DATA_TYPE)?.value ?? 0n),
    dims: fields.filter((f) => f.number === onnx.TENSOR_DIMS).flatMap(readVarints).map((d) => Number(BigInt.asIntN(64, d))),
    raw: payloadOf(raw),
  };
}

/**
 * Opens a model for rewriting. Throws on a graph whose nodes hold subgraphs (If, Loop,
 * Scan), whose inner names such a rewrite would not follow.
 */
export function openModel(model: Uint8Array): EditableModel {
  const opened: EditableModel = { nodes: [], initializers: new Map(), inputs: [], outputs: [], graphFields: [], modelFields: [] };
  const nameOf = (part: WireField) => fieldText(readFields(payloadOf(part)).find((f) => f.number === onnx.VALUE_INFO_NAME));
  for (const field of readFields(model)) {
    if (field.number !== onnx.MODEL_GRAPH) {
      opened.modelFields.push(field.bytes);
      continue;
    }
    for (const part of readFields(payloadOf(field))) {
      if (part.number === onnx.GRAPH_NODE) opened.nodes.push(readNode(payloadOf(part)));
      else if (part.number === onnx.GRAPH_INITIALIZER) {
        const tensor = readTensor(readFields(payloadOf(part)));
        opened.initializers.set(tensor.name, tensor);
      } else if (part.number !== onnx.GRAPH_VALUE_INFO) {
        opened.graphFields.push(part.bytes);
        if (part.number === onnx.GRAPH_INPUT) opened.inputs.push(nameOf(part));
        if (part.number === onnx.GRAPH_OUTPUT) opened.outputs.push(nameOf(part));
      }
    }
  }
  const nested = opened.nodes.find((node) =>
    node.rest.some((bytes) => {
      const [field] = readFields(bytes);
      return field.number === onnx.NODE_ATTRIBUTE && readFields(payloadOf(field)).some((a) => a.number === onnx.ATTRIBUTE_GRAPH || a.number === onnx.ATTRIBUTE_GRAPHS);
    }),
  );
  if (nested) throw new Error(`node ${nested.name} (${nested.opType}) holds a subgraph, which the int8 rewrite does not follow`);
  return opened;
}

/** An INT attribute (AttributeProto), as a node's `rest` holds it. */
export function intAttribute(name: string, value: number): Uint8Array {
  return lengthDelimitedField(onnx.NODE_ATTRIBUTE, Buffer.concat([stringField(onnx.ATTRIBUTE_NAME, name), varintField(onnx.ATTRIBUTE_INT, value), varintField(onnx.ATTRIBUTE_TYPE, onnx.ATTRIBUTE_TYPE_INT)]));
}

/** An INTS attribute (AttributeProto), as a node's `rest` holds it. */
export function intsAttribute(name: string, values: number[]): Uint8Array {
  return lengthDelimitedField(
    onnx.NODE_ATTRIBUTE,
    Buffer.concat([stringField(onnx.ATTRIBUTE_NAME, name), lengthDelimitedField(onnx.ATTRIBUTE_INTS, Buffer.concat(values.map(encodeVarint))), varintField(onnx.ATTRIBUTE_TYPE, onnx.ATTRIBUTE_TYPE_INTS)]),
  );
}

/**
 * A node's attributes by name, each INT or INTS one as its list of values and any other
 * kind as undefined (present, but not a list of integers).
 */
export function intAttributes(node: GraphNode): Map<string, number[] | undefined> {
  const found = new Map<string, number[] | undefined>();
  for (const bytes of node.rest) {
    const [field] = readFields(bytes);
    if (field.number !== onnx.NODE_ATTRIBUTE) continue;
    const parts = readFields(payloadOf(field));
    const ints = parts.filter((part) => part.number === onnx.ATTRIBUTE_INT || part.number === onnx.ATTRIBUTE_INTS);
    const type = parts.find((part) => part.number === onnx.ATTRIBUTE_TYPE)?.value;
    const isInts = type === BigInt(onnx.ATTRIBUTE_TYPE_INT) || type === BigInt(onnx.ATTRIBUTE_TYPE_INTS);
    found.set(fieldText(parts.find((part) => part.number === onnx.ATTRIBUTE_NAME)), isInts ? ints.flatMap(readVarints).map((value) => Number(BigInt.asIntN(64, value))) : undefined);
  }
  return found;
}

/** A graph input or output (`field`: GRAPH_INPUT or GRAPH_OUTPUT) of float32 values and fixed `dims`. */
export function floatValueInfo(field: number, name: string, dims: number[]): Uint8Array {
  const shape = dims.map((d) => lengthDelimitedField(onnx.SHAPE_DIM, varintField(onnx.DIM_VALUE, d)));
  const tensorType = Buffer.concat([varintField(onnx.TENSOR_TYPE_ELEM_TYPE, onnx.FLOAT), lengthDelimitedField(onnx.TENSOR_TYPE_SHAPE, Buffer.concat(shape))]);
  return lengthDelimitedField(field, Buffer.concat([stringField(onnx.VALUE_INFO_NAME, name), lengthDelimitedField(onnx.VALUE_INFO_TYPE, lengthDelimitedField(onnx.TYPE_TENSOR, tensorType))]));
}

/** The fixed dims of graph input `name` (as floatValueInfo writes them), or undefined when any is symbolic or missing. */
export function graphInputDims(model: EditableModel, name: string): number[] | undefined {
  for (const bytes of model.graphFields) {
    const [field] = readFields(bytes);
    if (field.number !== onnx.GRAPH_INPUT) continue;
    const parts = readFields(payloadOf(field));
    if (fieldText(parts.find((part) => part.number === onnx.VALUE_INFO_NAME)) !== name) continue;
    const type = parts.find((part) => part.number === onnx.VALUE_INFO_TYPE);
    const tensorType = type && readFields(payloadOf(type)).find((part) => part.number === onnx.TYPE_TENSOR);
    const shape = tensorType && readFields(payloadOf(tensorType)).find((part) => part.number === onnx.TENSOR_TYPE_SHAPE);
    if (!shape) return undefined;
    const dims = readFields(payloadOf(shape)).filter((part) => part.number === onnx.SHAPE_DIM).map((dim) => readFields(payloadOf(dim)).find((part) => part.number === onnx.DIM_VALUE));
    return dims.every((dim) => dim !== undefined) ? dims.map((dim) => Number(readVarints(dim!)[0])) : undefined;
  }
  return undefined;
}

/** An initializer from typed values; `dims` [] for a scalar. */
export function tensorOf(name: string, dataType: number, dims: number[], values: ArrayBufferView): GraphTensor {
  return { name, dataType, dims, raw: new Uint8Array(values.buffer, values.byteOffset, values.byteLength) };
}

function encodeNode(node: GraphNode): Uint8Array {
  return Buffer.concat([
    ...node.inputs.map((name) => stringField(onnx.NODE_INPUT, name)),
    ...node.outputs.map((name) => stringField(onnx.NODE_OUTPUT, name)),
    stringField(onnx.NODE_NAME, node.name),
    stringField(onnx.NODE_OP_TYPE, node.opType),
    ...node.rest,
  ]);
}

function encodeTensor(tensor: GraphTensor): Uint8Array {
  return Buffer.concat([
    ...tensor.dims.map((d) => varintField(onnx.TENSOR_DIMS, d)),
    varintField(onnx.TENSOR_DATA_TYPE, tensor.dataType),
    stringField(onnx.TENSOR_NAME, tensor.name),
    lengthDelimitedField(onnx.TENSOR_RAW_DATA, tensor.raw),
  ]);
}

/**
 * Writes the model back with `nodes` and `initializers` as its graph: nodes in the order
 * given (ONNX wants them topologically sorted), the graph's inputs and outputs and the
 * model's other fields as they stood.
 */
export function writeModel(model: EditableModel, nodes: GraphNode[], initializers: Iterable<GraphTensor>): Buffer {
  const graph = Buffer.concat([
    ...nodes.map((node) => lengthDelimitedField(onnx.GRAPH_NODE, encodeNode(node))),
    ...[...initializers].map((tensor) => lengthDelimitedField(onnx.GRAPH_INITIALIZER, encodeTensor(tensor))),
    ...model.graphFields,
  ]);
  return Buffer.concat([...model.modelFields, lengthDelimitedField(onnx.MODEL_GRAPH, graph)]);
}

/** The values of a float32 initializer, copied out so that they are aligned. */
export function floatValues(tensor: GraphTensor): Float32Array {
  if (tensor.dataType !== onnx.FLOAT) throw new Error(`initializer ${tensor.name} is not float32 (data type ${tensor.dataType})`);
  const copy = Uint8Array.from(tensor.raw);
  return new Float32Array(copy.buffer, 0, copy.length / 4);
}

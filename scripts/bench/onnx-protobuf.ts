/**
 * Just enough of the protobuf wire format to read the parts of an ONNX model the benchmark
 * needs (graph, nodes, attributes, initializer shapes, value infos) and to write tiny models.
 * Field numbers are those of onnx/onnx.proto3; tensor payloads are skipped, never decoded, so
 * an 88 MB model is walked in a few milliseconds without copying its weights.
 */

/** Wire types of the protobuf encoding. */
const VARINT = 0;
const FIXED64 = 1;
const BYTES = 2;
const FIXED32 = 5;

interface Field {
  number: number;
  wire: number;
  /** Varints as bigint (int64 dims must survive); fixed32/64 as their raw bytes. */
  value: bigint | Uint8Array;
}

function readVarint(bytes: Uint8Array, at: number): [bigint, number] {
  let result = 0n;
  let shift = 0n;
  for (;;) {
    if (at >= bytes.length) throw new Error('truncated protobuf varint');
    const byte = bytes[at++];
    result |= BigInt(byte & 0x7f) << shift;
    if ((byte & 0x80) === 0) return [result, at];
    shift += 7n;
  }
}

function* fieldsOf(bytes: Uint8Array): Generator<Field> {
  let at = 0;
  while (at < bytes.length) {
    const [key, next] = readVarint(bytes, at);
    at = next;
    const number = Number(key >> 3n);
    const wire = Number(key & 7n);
    if (wire === VARINT) {
      const [value, after] = readVarint(bytes, at);
      at = after;
      yield { number, wire, value };
    } else if (wire === BYTES) {
      const [length, after] = readVarint(bytes, at);
      const end = after + Number(length);
      if (end > bytes.length) throw new Error('truncated protobuf field');
      yield { number, wire, value: bytes.subarray(after, end) };
      at = end;
    } else if (wire === FIXED64 || wire === FIXED32) {
      const size = wire === FIXED64 ? 8 : 4;
      yield { number, wire, value: bytes.subarray(at, at + size) };
      at += size;
    } else {
      throw new Error(`unsupported protobuf wire type ${wire}`);
    }
  }
}

const text = (value: Field['value']) => new TextDecoder().decode(value as Uint8Array);
/** int64 as a JS number; protobuf stores negatives as 64-bit two's complement. */
const int64 = (value: bigint) => Number(BigInt.asIntN(64, value));

/** A repeated int64 field, which writers may send packed (one BYTES run) or one by one. */
function int64List(field: Field, into: number[]): void {
  if (field.wire === VARINT) {
    into.push(int64(field.value as bigint));
    return;
  }
  const bytes = field.value as Uint8Array;
  for (let at = 0; at < bytes.length; ) {
    const [value, next] = readVarint(bytes, at);
    into.push(int64(value));
    at = next;
  }
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
  for (const field of fieldsOf(bytes)) {
    if (field.number === 1) attribute.name = text(field.value);
    else if (field.number === 2) attribute.f = Buffer.from(field.value as Uint8Array).readFloatLE(0);
    else if (field.number === 3) attribute.i = int64(field.value as bigint);
    else if (field.number === 4) attribute.s = text(field.value);
    else if (field.number === 8) int64List(field, attribute.ints);
  }
  return attribute;
}

function readNode(bytes: Uint8Array): OnnxNode {
  const node: OnnxNode = { name: '', opType: '', domain: '', inputs: [], outputs: [], attributes: new Map() };
  for (const field of fieldsOf(bytes)) {
    if (field.number === 1) node.inputs.push(text(field.value));
    else if (field.number === 2) node.outputs.push(text(field.value));
    else if (field.number === 3) node.name = text(field.value);
    else if (field.number === 4) node.opType = text(field.value);
    else if (field.number === 5) {
      const attribute = readAttribute(field.value as Uint8Array);
      node.attributes.set(attribute.name, attribute);
    } else if (field.number === 7) node.domain = text(field.value);
  }
  return node;
}

function readTensorInfo(bytes: Uint8Array): OnnxTensorInfo {
  const tensor: OnnxTensorInfo = { name: '', dataType: 0, dims: [] };
  for (const field of fieldsOf(bytes)) {
    if (field.number === 1) int64List(field, tensor.dims);
    else if (field.number === 2) tensor.dataType = Number(field.value);
    else if (field.number === 8) tensor.name = text(field.value);
  }
  return tensor;
}

/** ValueInfoProto → TypeProto (2) → tensor_type (1) → elem_type (1), shape (2) → dim (1) → dim_value (1). */
function readValueInfo(bytes: Uint8Array): OnnxTensorInfo {
  const info: OnnxTensorInfo = { name: '', dataType: 0, dims: [] };
  for (const field of fieldsOf(bytes)) {
    if (field.number === 1) info.name = text(field.value);
    if (field.number !== 2) continue;
    for (const type of fieldsOf(field.value as Uint8Array)) {
      if (type.number !== 1) continue;
      for (const tensor of fieldsOf(type.value as Uint8Array)) {
        if (tensor.number === 1) info.dataType = Number(tensor.value);
        if (tensor.number !== 2) continue;
        for (const dim of fieldsOf(tensor.value as Uint8Array)) {
          if (dim.number !== 1) continue;
          let value = -1;
          for (const part of fieldsOf(dim.value as Uint8Array)) if (part.number === 1) value = int64(part.value as bigint);
          info.dims.push(value);
        }
      }
    }
  }
  return info;
}

function readGraph(bytes: Uint8Array): OnnxGraph {
  const graph: OnnxGraph = { nodes: [], initializers: new Map(), inputs: [], outputs: [], valueInfo: new Map() };
  for (const field of fieldsOf(bytes)) {
    const value = field.value as Uint8Array;
    if (field.number === 1) graph.nodes.push(readNode(value));
    else if (field.number === 5) {
      const tensor = readTensorInfo(value);
      graph.initializers.set(tensor.name, tensor);
    } else if (field.number === 11) graph.inputs.push(readValueInfo(value));
    else if (field.number === 12) graph.outputs.push(readValueInfo(value));
    else if (field.number === 13) {
      const info = readValueInfo(value);
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
  for (const field of fieldsOf(bytes)) {
    if (field.number === 1) model.irVersion = int64(field.value as bigint);
    else if (field.number === 7) model.graph = readGraph(field.value as Uint8Array);
    else if (field.number === 8) {
      const opset = { domain: '', version: 0 };
      for (const part of fieldsOf(field.value as Uint8Array)) {
        if (part.number === 1) opset.domain = text(part.value);
        if (part.number === 2) opset.version = int64(part.value as bigint);
      }
      model.opsets.push(opset);
    }
  }
  return model;
}

// ---- writing ----

function varint(value: number | bigint): number[] {
  let rest = BigInt.asUintN(64, BigInt(value));
  const out: number[] = [];
  do {
    let byte = Number(rest & 0x7fn);
    rest >>= 7n;
    if (rest !== 0n) byte |= 0x80;
    out.push(byte);
  } while (rest !== 0n);
  return out;
}

/** One protobuf field, ready to concatenate with others into a message. */
export type Encoded = Uint8Array;

const concat = (parts: Encoded[]) => Buffer.concat(parts);
const varintField = (number: number, value: number): Encoded => Uint8Array.from([...varint((number << 3) | VARINT), ...varint(value)]);
const bytesField = (number: number, payload: Uint8Array): Encoded => concat([Uint8Array.from([...varint((number << 3) | BYTES), ...varint(payload.length)]), payload]);
const stringField = (number: number, value: string) => bytesField(number, new TextEncoder().encode(value));

/** A float32 ValueInfoProto with a fixed shape (an empty shape still says "float tensor"). */
export function encodeValueInfo(name: string, dims: number[] | undefined): Encoded {
  const dimFields = (dims ?? []).map((d) => bytesField(1, varintField(1, d)));
  const tensorType = concat([varintField(1, 1), ...(dims ? [bytesField(2, concat(dimFields))] : [])]);
  return concat([stringField(1, name), bytesField(2, bytesField(1, tensorType))]);
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
    ...graph.nodes.map((n) => bytesField(1, n)),
    stringField(2, 'bench'),
    ...graph.inputs.map((i) => bytesField(11, i)),
    ...graph.outputs.map((o) => bytesField(12, o)),
  ]);
  return concat([varintField(1, 8), stringField(2, 'cutout-bench'), bytesField(7, graphBytes), bytesField(8, varintField(2, opset))]);
}

/**
 * The same model with more graph outputs, so a run returns intermediate tensors too. The
 * outputs carry only their names: ONNX Runtime takes their types from the nodes that write
 * them (float16 or float32 alike). Protobuf merges repeated fields across occurrences of a
 * message field, so the new outputs are sent as a second `graph` field holding only them.
 */
export function withExtraOutputs(model: Uint8Array, names: string[]): Uint8Array {
  const outputs = concat(names.map((name) => bytesField(12, stringField(1, name))));
  return concat([model, bytesField(7, outputs)]);
}

/**
 * Rewrites the bundled IS-Net model, which stores its weights and does its arithmetic in
 * float16 with Casts between float16 and float32 around the input, the outputs and every
 * Resize, into the same network in float32. ONNX Runtime's CPU kernels work in float32, so
 * on the original it casts activations back and forth around every layer on every run;
 * the rewritten model skips that work (see docs/internals/performance.md for the measured gain, and
 * test/model-rewrite.test.ts for outputs compared with the original's).
 *
 * Works on the protobuf wire format directly (onnx-wire.ts) and copies every field it does
 * not rewrite byte for byte, so nothing it does not understand is lost (a schema-driven
 * decoder would drop unknown fields). Shape hints (value_info) are dropped: they name float16 types, and
 * ONNX Runtime infers shapes again on load.
 */

import * as onnx from './onnx-fields.js';
import { fieldText, lengthDelimitedField, payloadOf, readFields, readVarints, varintField, type WireField } from './onnx-wire.js';

let halfTable: Float32Array | undefined;

/** float16 bit patterns to float32 values, all 65536 of them. */
function halfToFloatTable(): Float32Array {
  if (halfTable) return halfTable;
  halfTable = new Float32Array(65536);
  for (let h = 0; h < 65536; h++) {
    const sign = h & 0x8000 ? -1 : 1;
    const exponent = (h >> 10) & 0x1f;
    const mantissa = h & 0x3ff;
    halfTable[h] =
      exponent === 0 ? sign * 2 ** -14 * (mantissa / 1024) : exponent === 31 ? (mantissa ? NaN : sign * Infinity) : sign * 2 ** (exponent - 15) * (1 + mantissa / 1024);
  }
  return halfTable;
}

/** The float16 values of a tensor, from raw_data (little-endian) or int32_data. */
function halfValues(tensor: WireField[]): Uint16Array {
  const raw = tensor.find((f) => f.number === onnx.TENSOR_RAW_DATA)?.payload;
  if (raw) {
    const copy = Uint8Array.from(raw);
    return new Uint16Array(copy.buffer, 0, copy.length / 2);
  }
  const values = tensor.filter((f) => f.number === onnx.TENSOR_INT32_DATA).flatMap(readVarints);
  return Uint16Array.from(values, Number);
}

/** The tensor as float32 under a new name: every other field (dims, …) kept. */
function floatTensor(tensor: WireField[], name: string): Buffer {
  const table = halfToFloatTable();
  const halves = halfValues(tensor);
  const floats = new Float32Array(halves.length);
  for (let i = 0; i < halves.length; i++) floats[i] = table[halves[i]];
  const kept = tensor.filter((f) => ![onnx.TENSOR_DATA_TYPE, onnx.TENSOR_NAME, onnx.TENSOR_RAW_DATA, onnx.TENSOR_INT32_DATA].includes(f.number)).map((f) => f.bytes);
  return Buffer.concat([
    ...kept,
    varintField(onnx.TENSOR_DATA_TYPE, onnx.FLOAT),
    lengthDelimitedField(onnx.TENSOR_NAME, Buffer.from(name, 'utf8')),
    lengthDelimitedField(onnx.TENSOR_RAW_DATA, new Uint8Array(floats.buffer)),
  ]);
}

const nameOf = (message: WireField[], number: number) => fieldText(message.find((f) => f.number === number));

/** A node with its input and output names given by `nameFor`. */
function renameNode(node: Uint8Array, nameFor: (name: string) => string): Buffer {
  return Buffer.concat(
    readFields(node).map((field) => {
      if (field.number !== onnx.NODE_INPUT && field.number !== onnx.NODE_OUTPUT) return Buffer.from(field.bytes);
      const name = fieldText(field);
      const renamed = nameFor(name);
      return renamed === name ? Buffer.from(field.bytes) : lengthDelimitedField(field.number, Buffer.from(renamed, 'utf8'));
    }),
  );
}

function rewriteGraph(graph: Uint8Array): { graph: Buffer; converted: number } {
  const graphFields = readFields(graph);
  // The graph's own inputs and outputs keep their names.
  const fixed = new Set(
    graphFields.filter((f) => f.number === onnx.GRAPH_INPUT || f.number === onnx.GRAPH_OUTPUT).map((f) => nameOf(readFields(payloadOf(f)), onnx.VALUE_INFO_NAME)),
  );
  const isHalf = (tensor: WireField[]) => Number(tensor.find((f) => f.number === onnx.TENSOR_DATA_TYPE)?.value) === onnx.FLOAT16;

  // In float32 every Cast is the identity, so the names it joins are one value: each group
  // of joined names takes one name, the graph's own input or output name if it has one. A
  // Cast that would join two such names stays (a float-to-float Cast is harmless).
  const joined = new Map<string, string>();
  const nameFor = (name: string) => {
    while (joined.has(name)) name = joined.get(name)!;
    return name;
  };
  const casts = new Set<WireField>();
  for (const field of graphFields) {
    if (field.number !== onnx.GRAPH_NODE) continue;
    const node = readFields(payloadOf(field));
    if (nameOf(node, onnx.NODE_OP_TYPE) !== 'Cast') continue;
    const input = nameFor(nameOf(node, onnx.NODE_INPUT));
    const output = nameFor(nameOf(node, onnx.NODE_OUTPUT));
    if (fixed.has(input) && fixed.has(output)) continue;
    casts.add(field);
    if (fixed.has(output)) joined.set(input, output);
    else if (input !== output) joined.set(output, input);
  }

  let converted = 0;
  const out: Uint8Array[] = [];
  for (const field of graphFields) {
    if (field.number === onnx.GRAPH_VALUE_INFO || casts.has(field)) continue;
    if (field.number === onnx.GRAPH_NODE) {
      out.push(lengthDelimitedField(onnx.GRAPH_NODE, renameNode(payloadOf(field), nameFor)));
    } else if (field.number === onnx.GRAPH_INITIALIZER && isHalf(readFields(payloadOf(field)))) {
      const tensor = readFields(payloadOf(field));
      out.push(lengthDelimitedField(onnx.GRAPH_INITIALIZER, floatTensor(tensor, nameOf(tensor, onnx.TENSOR_NAME))));
      converted++;
    } else {
      out.push(Buffer.from(field.bytes));
    }
  }
  return { graph: Buffer.concat(out), converted };
}

/**
 * Returns the model in float32 and how many float16 weights were converted (0: the model
 * had none and is returned unchanged).
 *
 * @example const { model, converted } = convertModelToFp32(await readFile('isnet.onnx'))
 */
export function convertModelToFp32(model: Uint8Array): { model: Buffer; converted: number } {
  let converted = 0;
  const parts = readFields(model).map((field) => {
    if (field.number !== onnx.MODEL_GRAPH) return Buffer.from(field.bytes);
    const rewritten = rewriteGraph(payloadOf(field));
    converted = rewritten.converted;
    return lengthDelimitedField(onnx.MODEL_GRAPH, rewritten.graph);
  });
  return { model: converted ? Buffer.concat(parts) : Buffer.from(model), converted };
}

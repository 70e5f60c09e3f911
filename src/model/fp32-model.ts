/**
 * Rewrites the bundled IS-Net model, which stores its weights and does its arithmetic in
 * float16 with Casts between float16 and float32 around the input, the outputs and every
 * Resize, into the same network in float32. ONNX Runtime's CPU kernels work in float32, so
 * on the original it casts activations back and forth around every layer on every run;
 * the rewritten model skips that work (see docs/benchmarks.md for the measured gain, and
 * test/fp32-model.test.ts for outputs compared with the original's).
 *
 * Works on the protobuf wire format directly and copies every field it does not rewrite
 * byte for byte, so nothing it does not understand is lost (a schema-driven decoder would
 * drop unknown fields). Shape hints (value_info) are dropped: they name float16 types, and
 * ONNX Runtime infers shapes again on load.
 */

// onnx.proto field numbers used here.
const MODEL_GRAPH = 7;
const GRAPH_NODE = 1;
const GRAPH_INITIALIZER = 5;
const GRAPH_INPUT = 11;
const GRAPH_OUTPUT = 12;
const GRAPH_VALUE_INFO = 13;
const VALUE_INFO_NAME = 1;
const NODE_INPUT = 1;
const NODE_OUTPUT = 2;
const NODE_OP_TYPE = 4;
const TENSOR_DATA_TYPE = 2;
const TENSOR_NAME = 8;
const TENSOR_RAW_DATA = 9;
const TENSOR_INT32_DATA = 5;
const FLOAT = 1;
const FLOAT16 = 10;

const LENGTH_DELIMITED = 2;
const VARINT = 0;

interface Field {
  number: number;
  wireType: number;
  /** The whole field as it stands in the message (key and value). */
  bytes: Uint8Array;
  /** For length-delimited fields: the payload; for varints: the value. */
  payload?: Uint8Array;
  value?: bigint;
}

function readVarint(bytes: Uint8Array, at: number): [bigint, number] {
  let result = 0n;
  let shift = 0n;
  for (;;) {
    const byte = bytes[at++];
    if (byte === undefined) throw new Error('truncated varint in ONNX model');
    result |= BigInt(byte & 0x7f) << shift;
    if ((byte & 0x80) === 0) return [result, at];
    shift += 7n;
  }
}

function fields(message: Uint8Array): Field[] {
  const out: Field[] = [];
  let at = 0;
  while (at < message.length) {
    const start = at;
    const [key, afterKey] = readVarint(message, at);
    const number = Number(key >> 3n);
    const wireType = Number(key & 7n);
    at = afterKey;
    const field: Field = { number, wireType, bytes: message };
    if (wireType === VARINT) {
      [field.value, at] = readVarint(message, at);
    } else if (wireType === LENGTH_DELIMITED) {
      const [length, afterLength] = readVarint(message, at);
      field.payload = message.subarray(afterLength, afterLength + Number(length));
      at = afterLength + Number(length);
    } else if (wireType === 5) {
      at += 4;
    } else if (wireType === 1) {
      at += 8;
    } else {
      throw new Error(`unsupported protobuf wire type ${wireType} in ONNX model`);
    }
    field.bytes = message.subarray(start, at);
    out.push(field);
  }
  return out;
}

function varint(value: number | bigint): Uint8Array {
  let v = BigInt(value);
  const out: number[] = [];
  do {
    let byte = Number(v & 0x7fn);
    v >>= 7n;
    if (v > 0n) byte |= 0x80;
    out.push(byte);
  } while (v > 0n);
  return Uint8Array.from(out);
}

const lengthDelimited = (number: number, payload: Uint8Array) => Buffer.concat([varint((number << 3) | LENGTH_DELIMITED), varint(payload.length), payload]);
const varintField = (number: number, value: number) => Buffer.concat([varint((number << 3) | VARINT), varint(value)]);
const text = (payload: Uint8Array | undefined) => Buffer.from(payload ?? []).toString('utf8');

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
function halfValues(tensor: Field[]): Uint16Array {
  const raw = tensor.find((f) => f.number === TENSOR_RAW_DATA)?.payload;
  if (raw) {
    const copy = Uint8Array.from(raw);
    return new Uint16Array(copy.buffer, 0, copy.length / 2);
  }
  const packed = tensor.filter((f) => f.number === TENSOR_INT32_DATA);
  const values: number[] = [];
  for (const field of packed) {
    if (field.payload) for (let at = 0; at < field.payload.length; ) {
      const [value, next] = readVarint(field.payload, at);
      values.push(Number(value));
      at = next;
    }
    else values.push(Number(field.value));
  }
  return Uint16Array.from(values);
}

/** The tensor as float32 under a new name: every other field (dims, …) kept. */
function floatTensor(tensor: Field[], name: string): Buffer {
  const table = halfToFloatTable();
  const halves = halfValues(tensor);
  const floats = new Float32Array(halves.length);
  for (let i = 0; i < halves.length; i++) floats[i] = table[halves[i]];
  const kept = tensor.filter((f) => ![TENSOR_DATA_TYPE, TENSOR_NAME, TENSOR_RAW_DATA, TENSOR_INT32_DATA].includes(f.number)).map((f) => f.bytes);
  return Buffer.concat([
    ...kept,
    varintField(TENSOR_DATA_TYPE, FLOAT),
    lengthDelimited(TENSOR_NAME, Buffer.from(name, 'utf8')),
    lengthDelimited(TENSOR_RAW_DATA, new Uint8Array(floats.buffer)),
  ]);
}

const nameOf = (message: Field[], number: number) => text(message.find((f) => f.number === number)?.payload);

/** A node with its input and output names given by `nameFor`. */
function renameNode(node: Uint8Array, nameFor: (name: string) => string): Buffer {
  return Buffer.concat(
    fields(node).map((field) => {
      if (field.number !== NODE_INPUT && field.number !== NODE_OUTPUT) return Buffer.from(field.bytes);
      const name = text(field.payload);
      const renamed = nameFor(name);
      return renamed === name ? Buffer.from(field.bytes) : lengthDelimited(field.number, Buffer.from(renamed, 'utf8'));
    }),
  );
}

function rewriteGraph(graph: Uint8Array): { graph: Buffer; converted: number } {
  const graphFields = fields(graph);
  // The graph's own inputs and outputs keep their names.
  const fixed = new Set(
    graphFields.filter((f) => f.number === GRAPH_INPUT || f.number === GRAPH_OUTPUT).map((f) => nameOf(fields(f.payload!), VALUE_INFO_NAME)),
  );
  const isHalf = (tensor: Field[]) => Number(tensor.find((f) => f.number === TENSOR_DATA_TYPE)?.value) === FLOAT16;

  // In float32 every Cast is the identity, so the names it joins are one value: each group
  // of joined names takes one name, the graph's own input or output name if it has one. A
  // Cast that would join two such names stays (a float-to-float Cast is harmless).
  const joined = new Map<string, string>();
  const nameFor = (name: string) => {
    while (joined.has(name)) name = joined.get(name)!;
    return name;
  };
  const casts = new Set<Field>();
  for (const field of graphFields) {
    if (field.number !== GRAPH_NODE) continue;
    const node = fields(field.payload!);
    if (nameOf(node, NODE_OP_TYPE) !== 'Cast') continue;
    const input = nameFor(nameOf(node, NODE_INPUT));
    const output = nameFor(nameOf(node, NODE_OUTPUT));
    if (fixed.has(input) && fixed.has(output)) continue;
    casts.add(field);
    if (fixed.has(output)) joined.set(input, output);
    else if (input !== output) joined.set(output, input);
  }

  let converted = 0;
  const out: Buffer[] = [];
  for (const field of graphFields) {
    if (field.number === GRAPH_VALUE_INFO || casts.has(field)) continue;
    if (field.number === GRAPH_NODE) {
      out.push(lengthDelimited(GRAPH_NODE, renameNode(field.payload!, nameFor)));
    } else if (field.number === GRAPH_INITIALIZER && isHalf(fields(field.payload!))) {
      const tensor = fields(field.payload!);
      out.push(lengthDelimited(GRAPH_INITIALIZER, floatTensor(tensor, nameOf(tensor, TENSOR_NAME))));
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
  const parts = fields(model).map((field) => {
    if (field.number !== MODEL_GRAPH) return Buffer.from(field.bytes);
    const rewritten = rewriteGraph(field.payload!);
    converted = rewritten.converted;
    return lengthDelimited(MODEL_GRAPH, rewritten.graph);
  });
  return { model: converted ? Buffer.concat(parts) : Buffer.from(model), converted };
}

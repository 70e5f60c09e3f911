/**
 * The protobuf wire format, as far as Cutout's ONNX tools need it: reading a message's fields
 * without a schema, and writing varint and length-delimited fields. What the field numbers
 * mean stays with the callers (onnx-fields.ts for the model rewrites;
 * scripts/bench/onnx-protobuf.ts).
 *
 * Reading never copies: every field is a view into the message, so an 88 MB model is walked
 * without copying its weights, and a field the caller does not understand can be written
 * back byte for byte.
 */

/** Wire types of the protobuf encoding (the low three bits of a field's key). */
export const WireType = { VARINT: 0, FIXED64: 1, LEN: 2, FIXED32: 5 } as const;

/** One field of a message as it stands on the wire. */
export interface WireField {
  /** The field number from the .proto schema. */
  number: number;
  /** One of {@link WireType}. */
  wireType: number;
  /** The whole field (key and value): copy it to keep the field as it was. */
  bytes: Uint8Array;
  /** Varint fields: the value, as a bigint so 64-bit values survive. */
  value?: bigint;
  /** Length-delimited fields: the payload; fixed32/fixed64 fields: their little-endian bytes. */
  payload?: Uint8Array;
}

/** Reads the varint at `at`; returns its value and the offset after it. */
export function readVarint(bytes: Uint8Array, at: number): [bigint, number] {
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

/**
 * The fields of a message in the order they stand, repeated ones once per occurrence.
 * Throws on a field that runs past the end of the message or on a group (wire types 3, 4).
 *
 * @example const names = readFields(node).filter((f) => f.number === 1).map(fieldText)
 */
export function readFields(message: Uint8Array): WireField[] {
  const fields: WireField[] = [];
  let at = 0;
  while (at < message.length) {
    const start = at;
    const [key, afterKey] = readVarint(message, at);
    const number = Number(key >> 3n);
    const wireType = Number(key & 7n);
    at = afterKey;
    let value: bigint | undefined;
    let payload: Uint8Array | undefined;
    if (wireType === WireType.VARINT) {
      [value, at] = readVarint(message, at);
    } else if (wireType === WireType.LEN || wireType === WireType.FIXED64 || wireType === WireType.FIXED32) {
      let size = wireType === WireType.FIXED64 ? 8 : 4;
      if (wireType === WireType.LEN) {
        const [length, afterLength] = readVarint(message, at);
        size = Number(length);
        at = afterLength;
      }
      if (at + size > message.length) throw new Error('truncated protobuf field');
      payload = message.subarray(at, at + size);
      at += size;
    } else {
      throw new Error(`unsupported protobuf wire type ${wireType}`);
    }
    fields.push({ number, wireType, bytes: message.subarray(start, at), value, payload });
  }
  return fields;
}

/** The value of a varint field; throws if the field is not one. */
export function varintOf(field: WireField): bigint {
  if (field.value === undefined) throw new Error(`protobuf field ${field.number} is not a varint (wire type ${field.wireType})`);
  return field.value;
}

/** The payload of a length-delimited (or fixed-size) field; throws on a varint. */
export function payloadOf(field: WireField): Uint8Array {
  if (field.payload === undefined) throw new Error(`protobuf field ${field.number} has no payload (wire type ${field.wireType})`);
  return field.payload;
}

/** A string field as text; '' for a field that is absent. */
export function fieldText(field: WireField | undefined): string {
  if (!field) return '';
  const payload = payloadOf(field);
  return Buffer.from(payload.buffer, payload.byteOffset, payload.byteLength).toString('utf8');
}

/** The values of a repeated varint field, which writers may send packed (one payload) or one per field. */
export function readVarints(field: WireField): bigint[] {
  if (field.value !== undefined) return [field.value];
  const packed = payloadOf(field);
  const values: bigint[] = [];
  for (let at = 0; at < packed.length; ) {
    const [value, next] = readVarint(packed, at);
    values.push(value);
    at = next;
  }
  return values;
}

/** A value as a varint; negatives as 64-bit two's complement, as protobuf writes int64. */
export function encodeVarint(value: number | bigint): Uint8Array {
  let rest = BigInt.asUintN(64, BigInt(value));
  const out: number[] = [];
  do {
    let byte = Number(rest & 0x7fn);
    rest >>= 7n;
    if (rest !== 0n) byte |= 0x80;
    out.push(byte);
  } while (rest !== 0n);
  return Uint8Array.from(out);
}

const key = (number: number, wireType: number) => encodeVarint((number << 3) | wireType);

/** A whole varint field (key and value), ready to concatenate with others into a message. */
export function varintField(number: number, value: number | bigint): Uint8Array {
  return Buffer.concat([key(number, WireType.VARINT), encodeVarint(value)]);
}

/** A whole length-delimited field (a string, bytes, a sub-message or a packed run). */
export function lengthDelimitedField(number: number, payload: Uint8Array): Uint8Array {
  return Buffer.concat([key(number, WireType.LEN), encodeVarint(payload.length), payload]);
}

/** A whole string field, UTF-8 encoded. */
export function stringField(number: number, text: string): Uint8Array {
  return lengthDelimitedField(number, Buffer.from(text, 'utf8'));
}

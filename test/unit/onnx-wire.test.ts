import { describe, expect, it } from 'vitest';
import {
  encodeVarint,
  fieldText,
  lengthDelimitedField,
  payloadOf,
  readFields,
  readVarint,
  readVarints,
  stringField,
  varintField,
  varintOf,
  WireType,
} from '../../src/model/onnx-wire.js';

const bytes = (...values: number[]) => Uint8Array.from(values);

describe('varints', () => {
  it('encodes as protobuf does: 7 bits a byte, low first; int64 negatives in ten bytes', () => {
    expect([...encodeVarint(1)]).toEqual([1]);
    expect([...encodeVarint(300)]).toEqual([0xac, 0x02]);
    expect([...encodeVarint(-1)]).toEqual([0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01]);
  });

  it('reads back what it writes, with the offset after it', () => {
    for (const value of [0n, 127n, 128n, 300n, 2n ** 40n, 2n ** 64n - 1n]) {
      const encoded = Uint8Array.from([9, ...encodeVarint(value)]);
      expect(readVarint(encoded, 1)).toEqual([value, encoded.length]);
    }
  });

  it('throws on a varint cut short', () => {
    expect(() => readVarint(bytes(0xac), 0)).toThrow('truncated protobuf varint');
  });
});

describe('readFields', () => {
  it('reads every wire type, with each field whole and its value or payload', () => {
    const message = Buffer.concat([
      varintField(1, 150),
      stringField(2, 'Conv'),
      bytes((3 << 3) | WireType.FIXED32, 0, 0, 0x80, 0x3f),
      bytes((4 << 3) | WireType.FIXED64, 1, 2, 3, 4, 5, 6, 7, 8),
      stringField(2, 'again'),
    ]);
    const fields = readFields(message);
    expect(fields.map((f) => [f.number, f.wireType])).toEqual([[1, 0], [2, 2], [3, 5], [4, 1], [2, 2]]);
    expect(varintOf(fields[0])).toBe(150n);
    expect(fieldText(fields[1])).toBe('Conv');
    expect(Buffer.from(payloadOf(fields[2])).readFloatLE(0)).toBe(1);
    expect([...payloadOf(fields[3])]).toEqual([1, 2, 3, 4, 5, 6, 7, 8]);
    expect(fieldText(fields[4])).toBe('again');
    // The fields' own bytes put back together are the message: what the fp32 rewrite relies on.
    expect(Buffer.concat(fields.map((f) => f.bytes)).equals(message)).toBe(true);
  });

  it('reads nested messages and packed or one-by-one repeated varints alike', () => {
    const packed = lengthDelimitedField(1, Buffer.concat([encodeVarint(3), encodeVarint(300), encodeVarint(-1)]));
    const inner = readFields(payloadOf(readFields(lengthDelimitedField(7, packed))[0]));
    expect(readVarints(inner[0])).toEqual([3n, 300n, 2n ** 64n - 1n]);
    expect(readVarints(readFields(varintField(1, 5))[0])).toEqual([5n]);
  });

  it('says "" for an absent string field, and throws when a field is read as the wrong kind', () => {
    const [number, text] = readFields(Buffer.concat([varintField(1, 2), stringField(2, 'x')]));
    expect(fieldText(undefined)).toBe('');
    expect(() => payloadOf(number)).toThrow('protobuf field 1 has no payload');
    expect(() => varintOf(text)).toThrow('protobuf field 2 is not a varint');
  });

  it('throws on a field that runs past the end and on groups', () => {
    expect(() => readFields(bytes((1 << 3) | WireType.LEN, 5, 1, 2))).toThrow('truncated protobuf field');
    expect(() => readFields(bytes((1 << 3) | WireType.FIXED32, 1, 2))).toThrow('truncated protobuf field');
    expect(() => readFields(bytes((1 << 3) | 3))).toThrow('unsupported protobuf wire type 3');
  });
});

import { describe, expect, it } from 'vitest';
import { addressPolicy, nonPublicReason, parseAddress } from '../../src/fetch/address-policy.js';

// The reason each non-public range is refused with, exactly: the URL fetch's tests check that a
// range is refused, these that it is refused for the right reason, and that the forms carrying
// an IPv4 address are judged by the address inside.

const reasonFor = (text: string) => {
  const address = parseAddress(text);
  expect(address, text).toBeDefined();
  return nonPublicReason(address!);
};

describe('nonPublicReason', () => {
  it.each([
    ['8.8.8.8', undefined],
    ['2000::1', undefined],
    ['2a00:1450::1', undefined],
    ['10.0.0.1', 'private'],
    ['127.0.0.1', 'loopback'],
    ['169.254.169.254', 'linkLocal'],
    ['::1', 'loopback'],
    ['::', 'unspecified'],
    ['fe80::1', 'linkLocal'],
    ['100::1', 'discard'],
    ['2001::1', 'teredo'],
    ['3fff::1', 'reserved'],
    ['::7f00:1', 'ipv4Compatible'],
    ['::808:808', 'ipv4Compatible'],
    ['::2', 'ipv4Compatible'],
    ['1fff::1', 'unallocated'],
    ['4000::1', 'unallocated'],
  ])('%s: %s', (text, reason) => {
    expect(reasonFor(text)).toBe(reason);
  });

  it.each([
    ['::ffff:a00:1', 'ipv4Mapped of private'],
    ['::ffff:808:808', undefined],
    ['::ffff:0:7f00:1', 'rfc6145 of loopback'],
    ['::ffff:0:808:808', undefined],
    ['64:ff9b::a00:1', 'rfc6052 of private'],
    ['64:ff9b::808:808', undefined],
    ['64:ff9b:1::808:808', 'rfc6052'],
    ['2002:7f00:1::1', '6to4 of loopback'],
    ['2002:a00:1::', '6to4 of private'],
    ['2002:808:808::', undefined],
  ])('judges %s by the IPv4 address inside: %s', (text, reason) => {
    expect(reasonFor(text)).toBe(reason);
  });
});

describe('parseAddress', () => {
  it('parses the plain forms DNS answers with, and nothing else', () => {
    expect(parseAddress('10.1.2.3')?.toString()).toBe('10.1.2.3');
    expect(parseAddress('fd00::1')?.toString()).toBe('fd00::1');
    for (const text of ['', '[::1]', '10.1', '0x0a.0.0.1', '010.0.0.1', ' 10.0.0.1']) expect(parseAddress(text), text).toBeUndefined();
  });
});

describe('addressPolicy', () => {
  it('refuses non-public addresses unless private ones are allowed', () => {
    const loopback = parseAddress('127.0.0.1')!;
    const metadata = parseAddress('169.254.169.254')!;
    expect(addressPolicy(false)(loopback)).toBe('loopback');
    expect(addressPolicy(false)(metadata)).toBe('linkLocal');
    expect(addressPolicy(false)(parseAddress('8.8.8.8')!)).toBeUndefined();
    expect(addressPolicy(true)(loopback)).toBeUndefined();
    expect(addressPolicy(true)(metadata)).toBeUndefined();
  });
});

import { expect, it } from 'vitest';

// The ranges address-policy.ts parses when it loads, imported inside the test rather than at
// the top of the file: a broken range then fails this test, where a failing top-level import
// fails the file before any test exists, which mutation testing does not count as a kill.

it('the address policy parses its ranges when it loads', async () => {
  const { nonPublicReason, parseAddress } = await import('../../src/fetch/address-policy.js');
  const reason = (text: string) => nonPublicReason(parseAddress(text)!);
  expect([reason('2000::1'), reason('::2'), reason('64:ff9b::808:808'), reason('64:ff9b::a00:1')]).toEqual([undefined, 'ipv4Compatible', undefined, 'rfc6052 of private']);
});

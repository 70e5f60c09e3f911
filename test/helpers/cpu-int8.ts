import { readFileSync } from 'node:fs';

/**
 * Whether this CPU has an int8 dot product (AVX-512 VNNI, AVX-VNNI or AMX). Without one,
 * ONNX Runtime's u8s8 convolution (AVX2's vpmaddubsw) adds each pair of products in 16 bits,
 * which saturate: the same integer convolution then depends on how its inputs are laid out,
 * and drifts from float32 by tenths (measured on a Zen 3 EPYC: 0.146 on the precision probe).
 */
export const cpuHasInt8DotProduct = (() => {
  try {
    return /\b(avx512_vnni|avx_vnni|amx_int8)\b/.test(readFileSync('/proc/cpuinfo', 'utf8'));
  } catch {
    return false;
  }
})();

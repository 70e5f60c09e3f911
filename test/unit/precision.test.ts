import { describe, expect, it } from 'vitest';
import { decidePrecision, INT8_PROBE_RATIO } from '../../src/model/precision.js';

describe('decidePrecision', () => {
  it('takes int8 only when its convolution is clearly faster', () => {
    expect(decidePrecision({ fp32Ms: [10, 11, 30], int8Ms: [3, 3.2, 9] }).precision).toBe('int8');
    expect(decidePrecision({ fp32Ms: [10, 10, 10], int8Ms: [9, 9, 9] })).toMatchObject({ precision: 'fp32', reason: expect.stringContaining(`${INT8_PROBE_RATIO}`) });
    expect(decidePrecision({ fp32Ms: [10], int8Ms: [10 * INT8_PROBE_RATIO] }).precision).toBe('int8');
  });
});

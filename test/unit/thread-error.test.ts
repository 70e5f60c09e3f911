import { MessageChannel, receiveMessageOnPort } from 'node:worker_threads';
import { describe, expect, it } from 'vitest';
import { CutoutError } from '../../src/errors.js';
import { fromThreadError, toThreadError } from '../../src/threads/thread-error.js';

/** The value as another thread would receive it: through a real port, structured-cloned. */
function acrossAThread<T>(value: T): T {
  const { port1, port2 } = new MessageChannel();
  port1.postMessage(value);
  const received = receiveMessageOnPort(port2)?.message as T;
  port1.close();
  return received;
}

describe('an error crossing a thread', () => {
  it('comes back as a CutoutError with its code, detail and cause', () => {
    const low = Object.assign(new Error('VipsJpeg: premature end of input file'), { code: 'ERR_VIPS' });
    const sent = new CutoutError('image_decode_failed', 'The JPEG image could not be decoded.', { cause: low });
    const back = fromThreadError(acrossAThread(toThreadError(sent)));
    expect(back).toBeInstanceOf(CutoutError);
    expect((back as CutoutError).code).toBe('image_decode_failed');
    expect((back as CutoutError).status).toBe(422);
    expect(back.message).toBe('The JPEG image could not be decoded.');
    expect(back.cause).toBeInstanceOf(Error);
    expect((back.cause as Error).message).toBe('VipsJpeg: premature end of input file');
    expect((back.cause as { code?: string }).code).toBe('ERR_VIPS');
    expect(back.stack).toBe(sent.stack);
  });

  it('keeps a plain error plain, with its name, and something thrown that is not an Error as text', () => {
    const back = fromThreadError(acrossAThread(toThreadError(new RangeError('offset out of bounds'))));
    expect(back).not.toBeInstanceOf(CutoutError);
    expect([back.name, back.message]).toEqual(['RangeError', 'offset out of bounds']);
    expect(fromThreadError(acrossAThread(toThreadError('a string'))).message).toBe('a string');
  });
});

import { connect, type AddressInfo, type Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { ModelService } from '../src/model/model-service.js';
import type { RawImage } from '../src/image/raw-image.js';
import { startTestApp, type TestApp } from './helpers/app.js';
import { uniformMask } from './helpers/fake-segmenter.js';
import { makePhoto } from './helpers/images.js';

/**
 * A listening app stops while a client holds a connection on which it has sent nothing (HTTP
 * clients open them ahead of a request): Node's server waits for such a connection until the
 * client gives up, and a SIGTERM's drain took the whole shutdown grace. Closing must end it at
 * once, and still let a request under way on another connection finish.
 */
describe('closing the app with a connection that carries no request', () => {
  let t: TestApp | undefined;
  afterEach(async () => {
    await t?.close().catch(() => undefined);
    t = undefined;
  });

  /**
   * `promise`, or a failure after 10 s: without the plugin the server waits for the client's
   * connections (Node's headers timeout, 60 s; Fastify's keep-alive timeout, 72 s), and the
   * test should say which wait it was rather than run into its own timeout.
   */
  const within = <T>(promise: Promise<T>, failure: string): Promise<T> => {
    let timer: NodeJS.Timeout | undefined;
    return Promise.race([promise, new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(failure)), 10_000)))]).finally(() => clearTimeout(timer));
  };

  const openSocket = async (port: number): Promise<{ socket: Socket; closed: Promise<void> }> => {
    const socket = connect(port, '127.0.0.1');
    await new Promise<void>((resolve, reject) => socket.once('connect', resolve).once('error', reject));
    return { socket, closed: new Promise<void>((resolve) => socket.once('close', () => resolve())) };
  };

  it('closes that connection, and answers the request under way on another before it ends', async () => {
    let releasePass!: () => void;
    const passHeld = new Promise<void>((resolve) => (releasePass = resolve));
    let passStarted!: () => void;
    const started = new Promise<void>((resolve) => (passStarted = resolve));
    const held = {
      size: 1024,
      async segment(pictures: readonly RawImage[]) {
        passStarted();
        await passHeld;
        return pictures.map(() => uniformMask(1024, 255));
      },
      close: async () => {},
    };
    t = await startTestApp({}, { model: ModelService.ofSegmenter(held) });
    await t.app.listen({ port: 0, host: '127.0.0.1' });
    const { port } = t.app.server.address() as AddressInfo;
    const origin = `http://127.0.0.1:${port}`;

    const removal = fetch(`${origin}/api/v1/background/remove/base64`, {
      method: 'POST',
      headers: { authorization: await t.managedToken(), 'content-type': 'application/json' },
      body: JSON.stringify({ image_base64: (await makePhoto('jpeg', 64, 48)).toString('base64') }),
    });
    await started;
    const unused = await openSocket(port);

    let closedApp = false;
    const closing = t.app.close().then(() => (closedApp = true));
    // The unused connection ends at once; the app waits for the removal under way.
    await within(unused.closed, 'the unused connection was not closed');
    expect(closedApp).toBe(false);
    releasePass();
    const answer = await removal;
    expect(answer.status).toBe(200);
    expect((await answer.json()).image_base64).toMatch(/^[A-Za-z0-9+/]+=*$/);
    await within(closing, 'the app did not close');
    expect(closedApp).toBe(true);
  });
});

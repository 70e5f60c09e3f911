import { getEventListeners } from 'node:events';
import http, { type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo, LookupFunction } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { fetchImage, fetchImageWithPolicy, type FetchImageOptions } from '../../src/fetch/fetch-image.js';
import { cutoutFailure } from '../helpers/cutout-failure.js';

// Edges of the URL fetch that test/fetch-image.test.ts leaves open: which statuses count as an
// answer, every part of a credential, a redirect without a usable Location, an exact
// Content-Length, a resolver that finds nothing, a caller that gave up before the start, and
// the field name the details carry.

const IMAGE = Buffer.from('89504e470d0a1a0a0000000d49484452', 'hex');
const LOCAL: FetchImageOptions = { timeoutMs: 5000, maxBytes: 1024, maxRedirects: 3, allowPrivate: true };

const servers: http.Server[] = [];
afterEach(async () => {
  await Promise.all(
    servers.splice(0).map(
      (server) =>
        new Promise<void>((resolve) => {
          server.closeAllConnections();
          server.close(() => resolve());
        }),
    ),
  );
});

/** A loopback server; resolves with its base URL and the requests it has received. */
async function serve(handler: (req: IncomingMessage, res: ServerResponse) => void): Promise<{ url: string; requests: IncomingMessage[] }> {
  const requests: IncomingMessage[] = [];
  const server = http.createServer((req, res) => {
    requests.push(req);
    handler(req, res);
  });
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, requests };
}


describe('fetchImage', () => {
  it('asks for the bytes as they are, with no content encoding', async () => {
    const server = await serve((_req, res) => res.writeHead(200).end(IMAGE));
    await fetchImage(`${server.url}/`, LOCAL);
    expect(server.requests[0].method).toBe('GET');
    expect(server.requests[0].headers['accept-encoding']).toBe('identity');
  });

  it('takes any 2xx as the image and refuses any other answer, naming its status', async () => {
    const server = await serve((req, res) => res.writeHead(Number(req.url!.slice(1))).end(IMAGE));
    expect((await fetchImage(`${server.url}/200`, LOCAL)).equals(IMAGE)).toBe(true);
    expect((await fetchImage(`${server.url}/299`, LOCAL)).equals(IMAGE)).toBe(true);
    for (const status of [300, 304, 500]) {
      expect((await cutoutFailure(fetchImage(`${server.url}/${status}`, LOCAL), 'upstream_fetch_failed')).message).toBe(`image_url answered HTTP ${status}.`);
    }
  });

  it('treats a redirect status without Location as a failed answer', async () => {
    const server = await serve((_req, res) => res.writeHead(302).end());
    expect((await cutoutFailure(fetchImage(`${server.url}/`, LOCAL), 'upstream_fetch_failed')).message).toBe('image_url answered HTTP 302.');
    expect(server.requests).toHaveLength(1);
  });

  it('names the hop in the details of a redirect that fails', async () => {
    const server = await serve((req, res) => (req.url === '/' ? res.writeHead(301, { Location: '/gone' }).end() : res.writeHead(404).end()));
    expect((await cutoutFailure(fetchImage(`${server.url}/`, LOCAL), 'upstream_fetch_failed')).message).toBe('image_url redirect 1 answered HTTP 404.');
  });

  it('refuses a redirect to a URL that does not parse', async () => {
    const server = await serve((_req, res) => res.writeHead(302, { Location: 'http://[::1' }).end());
    const error = await cutoutFailure(fetchImage(`${server.url}/`, LOCAL), 'upstream_fetch_failed');
    expect(error.message).toBe('image_url redirected to an invalid URL.');
    expect(error.cause).toBeInstanceOf(TypeError);
  });

  it('refuses a user name alone and a password alone', async () => {
    const server = await serve((_req, res) => res.writeHead(200).end(IMAGE));
    const port = new URL(server.url).port;
    for (const url of [`http://user@127.0.0.1:${port}/`, `http://:secret@127.0.0.1:${port}/`]) {
      expect((await cutoutFailure(fetchImage(url, LOCAL), 'url_not_allowed')).message).toBe('image_url must not contain a user name or password.');
    }
    expect(server.requests).toHaveLength(0);
  });

  it('takes a Content-Length of exactly maxBytes', async () => {
    const body = Buffer.alloc(LOCAL.maxBytes, 3);
    const server = await serve((_req, res) => res.writeHead(200, { 'Content-Length': String(body.length) }).end(body));
    expect((await fetchImage(`${server.url}/`, LOCAL)).equals(body)).toBe(true);
    const over = await serve((_req, res) => res.writeHead(200, { 'Content-Length': String(body.length + 1) }).end(Buffer.concat([body, body.subarray(0, 1)])));
    expect((await cutoutFailure(fetchImage(`${over.url}/`, LOCAL), 'payload_too_large')).message).toBe('image_url: the fetched image exceeds 1024 bytes.');
  });

  it('compares host patterns trimmed, and needs something before a *. suffix', async () => {
    const lookup: LookupFunction = (hostname, _options, callback) => setImmediate(() => callback(null, [{ address: '127.0.0.1', family: 4 }]));
    const server = await serve((_req, res) => res.writeHead(200).end(IMAGE));
    const port = new URL(server.url).port;
    const denied = await cutoutFailure(fetchImage(`http://bad.example.com:${port}/`, { ...LOCAL, lookup, denyHosts: ['  bad.example.com  '] }), 'url_not_allowed');
    expect(denied.message).toBe('image_url: host bad.example.com is on the deny list.');
    const notAllowed = await cutoutFailure(fetchImage(`http://example.com:${port}/`, { ...LOCAL, lookup, allowHosts: ['*.example.com'] }), 'url_not_allowed');
    expect(notAllowed.message).toBe('image_url: host example.com is not on the allow list.');
    expect((await fetchImage(`http://a.example.com:${port}/`, { ...LOCAL, lookup, allowHosts: [' *.example.com '] })).equals(IMAGE)).toBe(true);
    const bareDot = await cutoutFailure(fetchImage(`http://.example.com:${port}/`, { ...LOCAL, lookup, allowHosts: ['*.example.com'] }), 'url_not_allowed');
    expect(bareDot.message).toBe('image_url: host .example.com is not on the allow list.');
  });

  it('keeps the parse error of a URL that is not one as the cause', async () => {
    const error = await cutoutFailure(fetchImage('not a url', LOCAL), 'url_not_allowed');
    expect(error.cause).toBeInstanceOf(TypeError);
  });

  describe('name resolution', () => {
    const lookupAnswering =
      (answer: (callback: (error: NodeJS.ErrnoException | null, address: string | { address: string; family: number }[], family?: number) => void) => void): LookupFunction =>
      (_hostname, _options, callback) =>
        setImmediate(() => answer(callback as never));

    it('asks the resolver for every address of the name, and checks each', async () => {
      const server = await serve((_req, res) => res.writeHead(200).end(IMAGE));
      const port = new URL(server.url).port;
      // Like dns.lookup: the first address only, unless asked for all.
      const lookup: LookupFunction = (_hostname, options, callback) =>
        setImmediate(() => {
          const answers = [{ address: '127.0.0.1', family: 4 }, { address: '10.0.0.7', family: 4 }];
          if (options.all === true) callback(null, answers);
          else callback(null, answers[0].address, answers[0].family);
        });
      const loopbackOnly = (address: { toString(): string }) => (address.toString() === '127.0.0.1' ? undefined : 'private');
      const error = await cutoutFailure(fetchImageWithPolicy(`http://mixed.test:${port}/`, { ...LOCAL, lookup }, loopbackOnly), 'url_not_allowed');
      expect(error.message).toBe('image_url: host mixed.test resolves to a non-public address (private).');
      expect(server.requests).toHaveLength(0);
    });

    it('fails when the name has no addresses', async () => {
      const lookup = lookupAnswering((callback) => callback(null, []));
      expect((await cutoutFailure(fetchImage('http://empty.test/', { ...LOCAL, lookup }), 'upstream_fetch_failed')).message).toBe('image_url: host empty.test has no addresses.');
    });

    it('keeps the resolver error as the cause, and a reason even when it has no code', async () => {
      const lost = new Error('no code here');
      const lookup = lookupAnswering((callback) => callback(lost, []));
      const error = await cutoutFailure(fetchImage('http://lost.test/', { ...LOCAL, lookup }), 'upstream_fetch_failed');
      expect(error.message).toBe('image_url: host lost.test could not be resolved (connection failed).');
      expect(error.cause).toBe(lost);
    });

    it('takes a resolver that answers one address rather than a list, and checks it', async () => {
      const server = await serve((_req, res) => res.writeHead(200).end(IMAGE));
      const port = new URL(server.url).port;
      const single = lookupAnswering((callback) => callback(null, '127.0.0.1', 4));
      expect((await fetchImage(`http://one.test:${port}/`, { ...LOCAL, lookup: single })).equals(IMAGE)).toBe(true);
      const noFamily = lookupAnswering((callback) => callback(null, '127.0.0.1'));
      expect((await fetchImage(`http://one.test:${port}/`, { ...LOCAL, lookup: noFamily })).equals(IMAGE)).toBe(true);
      const refused = await cutoutFailure(fetchImage(`http://one.test:${port}/`, { ...LOCAL, allowPrivate: false, lookup: single }), 'url_not_allowed');
      expect(refused.message).toBe('image_url: host one.test resolves to a non-public address (loopback).');
      const notAnAddress = lookupAnswering((callback) => callback(null, 'localhost', 4));
      expect((await cutoutFailure(fetchImage(`http://one.test:${port}/`, { ...LOCAL, lookup: notAnAddress }), 'url_not_allowed')).message).toBe(
        'image_url: host one.test resolves to a non-public address (not an IP address).',
      );
    });
  });

  describe("the caller's signal", () => {
    it('already aborted: nothing is requested', async () => {
      const server = await serve((_req, res) => res.writeHead(200).end(IMAGE));
      const error = await cutoutFailure(fetchImage(`${server.url}/`, { ...LOCAL, signal: AbortSignal.abort(new Error('gone')) }), 'upstream_fetch_failed');
      expect(error.message).toBe('The fetch was cancelled.');
      expect((error.cause as Error).message).toBe('gone');
      expect(server.requests).toHaveLength(0);
    });

    it('is let go of when the fetch ends, however it ends', async () => {
      const server = await serve((req, res) => (req.url === '/ok' ? res.writeHead(200).end(IMAGE) : res.writeHead(404).end()));
      const caller = new AbortController();
      await fetchImage(`${server.url}/ok`, { ...LOCAL, signal: caller.signal });
      await cutoutFailure(fetchImage(`${server.url}/missing`, { ...LOCAL, signal: caller.signal }), 'upstream_fetch_failed');
      expect(getEventListeners(caller.signal, 'abort')).toHaveLength(0);
    });
  });

  it('names the field it was given in every detail', async () => {
    const server = await serve((_req, res) => res.writeHead(404).end());
    const options = { ...LOCAL, field: 'bg_image_url' };
    expect((await cutoutFailure(fetchImage(`${server.url}/`, options), 'upstream_fetch_failed')).message).toBe('bg_image_url answered HTTP 404.');
    expect((await cutoutFailure(fetchImage('ftp://example.com/', options), 'url_not_allowed')).message).toBe('bg_image_url must use http: or https:, not ftp:');
    expect((await cutoutFailure(fetchImage('http://127.0.0.1/', { ...options, allowPrivate: false }), 'url_not_allowed')).message).toBe(
      'bg_image_url: 127.0.0.1 is not a public address (loopback).',
    );
    const silent = await serve(() => {});
    expect((await cutoutFailure(fetchImage(`${silent.url}/`, { ...options, timeoutMs: 200 }), 'upstream_timeout')).message).toBe('bg_image_url did not finish within 200 ms.');
  });
});

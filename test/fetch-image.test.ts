import http, { type IncomingMessage, type ServerResponse } from 'node:http';
import https from 'node:https';
import { isIP, type AddressInfo, type LookupFunction } from 'node:net';
import { createSecureContext } from 'node:tls';
import { afterEach, describe, expect, it } from 'vitest';
import type { CutoutError } from '../src/errors.js';
import { nonPublicReason, parseAddress, type AddressPolicy } from '../src/fetch/address-policy.js';
import { fetchImage, fetchImageWithPolicy, type FetchImageOptions } from '../src/fetch/fetch-image.js';
import { cutoutFailure } from './helpers/cutout-failure.js';

const IMAGE = Buffer.from('89504e470d0a1a0a0000000d49484452', 'hex');
// A deadline no loopback answer misses on a loaded machine; the deadline's own tests set theirs.
const BASE: FetchImageOptions = { timeoutMs: 10_000, maxBytes: 1024, maxRedirects: 3, allowPrivate: false };
/** Far below the 15 s default, far above a deadline of 300 ms: a timeout by then is the one given. */
const CEILING_MS = 5000;

// A throwaway self-signed certificate for public.test, valid until 2126; it signs nothing real.
const TEST_KEY = `-----BEGIN PRIVATE KEY-----
MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgojg5qr22vZZaajoU
o4Rw/8XcYXY9Qqu7DDOZLp0E83mhRANCAASGTXNhFMQqny3Ri+EUD99E5VN8Jp1+
iq7+MoTXgelvZX0TeUPG77ApHk1WGYM+5afO5H+DhlQCgaNopEpEnD4C
-----END PRIVATE KEY-----`;
const TEST_CERT = `-----BEGIN CERTIFICATE-----
MIIBmzCCAUGgAwIBAgIUGc2THseX71hQwdcGDaW15V2J8W8wCgYIKoZIzj0EAwIw
FjEUMBIGA1UEAwwLcHVibGljLnRlc3QwIBcNMjYxMTIxMDUwOTQyWhgPMjEyNjEw
MjgwNTA5NDJaMBYxFDASBgNVBAMMC3B1YmxpYy50ZXN0MFkwEwYHKoZIzj0CAQYI
KoZIzj0DAQcDQgAEhk1zYRTEKp8t0YvhFA/fROVTfCadfoqu/jKE14Hpb2V9E3lD
xu+wKR5NVhmDPuWnzuR/g4ZUAoGjaKRKRJw+AqNrMGkwHQYDVR0OBBYEFPD1W2oT
EyX7m+gHYO2ZteTrkDBLMB8GA1UdIwQYMBaAFPD1W2oTEyX7m+gHYO2ZteTrkDBL
MA8GA1UdEwEB/wQFMAMBAf8wFgYDVR0RBA8wDYILcHVibGljLnRlc3QwCgYIKoZI
zj0EAwIDSAAwRQIgRo9P2N+/cmycHvEHz8OHMFjKcoCQLd3rUW6+R+/YfEYCIQDH
ySFEx1jrf+GRUNzl63kpJNo66um7K32ioOABTrsk4Q==
-----END CERTIFICATE-----`;

interface TestServer {
  port: number;
  /** Requests received so far, in order. */
  requests: IncomingMessage[];
  close(): Promise<void>;
}

const openServers: TestServer[] = [];
afterEach(async () => {
  await Promise.all(openServers.splice(0).map((server) => server.close()));
});

async function serve(
  handler: (req: IncomingMessage, res: ServerResponse) => void,
  create: (listener: http.RequestListener) => http.Server = (listener) => http.createServer(listener),
): Promise<TestServer> {
  const requests: IncomingMessage[] = [];
  const server = create((req, res) => {
    requests.push(req);
    handler(req, res);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const testServer: TestServer = {
    port: (server.address() as AddressInfo).port,
    requests,
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
  openServers.push(testServer);
  return testServer;
}

function serveImage(): Promise<TestServer> {
  return serve((_req, res) => res.writeHead(200, { 'Content-Type': 'image/png' }).end(IMAGE));
}

/** A resolver that answers from a table (asynchronously, like DNS) and records each name asked. */
function stubLookup(table: Record<string, string | string[] | (() => string)>, calls: string[] = []): LookupFunction {
  return (hostname, _options, callback) => {
    calls.push(hostname);
    const entry = table[hostname];
    setImmediate(() => {
      if (entry === undefined) {
        callback(Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: 'ENOTFOUND' }), []);
        return;
      }
      const answers = typeof entry === 'function' ? [entry()] : Array.isArray(entry) ? entry : [entry];
      callback(null, answers.map((address) => ({ address, family: isIP(address) })));
    });
  };
}

/** The address policy with one exception, so a loopback test server can stand in for a public host. */
const loopbackCountsAsPublic: AddressPolicy = (address) => (address.toString() === '127.0.0.1' ? undefined : nonPublicReason(address));


describe('address policy', () => {
  it.each([
    '8.8.8.8',
    '1.1.1.1',
    '2606:4700:4700::1111',
    '2001:4860:4860::8888',
    '::ffff:8.8.8.8',
    '64:ff9b::808:808',
    '2002:808:808::1',
  ])('counts %s as public', (text) => {
    expect(nonPublicReason(parseAddress(text)!)).toBeUndefined();
  });

  it('does not parse the lenient spellings DNS never returns', () => {
    expect(parseAddress('0x7f.1')).toBeUndefined();
    expect(parseAddress('2130706433')).toBeUndefined();
    expect(parseAddress('example.com')).toBeUndefined();
  });
});

describe('fetchImage', () => {
  it('returns the body and sends its User-Agent and Accept headers', async () => {
    const server = await serveImage();
    const bytes = await fetchImage(`http://127.0.0.1:${server.port}/cat.png?size=big`, { ...BASE, allowPrivate: true });
    expect(bytes.equals(IMAGE)).toBe(true);
    expect(server.requests[0].url).toBe('/cat.png?size=big');
    expect(server.requests[0].headers['user-agent']).toBe('Cutout/0.1 (+background removal)');
    expect(server.requests[0].headers.accept).toBe('image/*');
  });

  it('refuses 127.0.0.1 unless allowPrivate is set', async () => {
    const server = await serveImage();
    const error = await cutoutFailure(fetchImage(`http://127.0.0.1:${server.port}/`, BASE), 'url_not_allowed');
    expect(error.message).toContain('loopback');
    expect(server.requests).toHaveLength(0);
  });

  // If a range slipped through, the fetch would try to connect and end in
  // upstream_fetch_failed or upstream_timeout instead.
  it.each([
    ['loopback', 'http://127.0.0.1/'],
    ['loopback, decimal', 'http://2130706433/'],
    ['loopback, hex', 'http://0x7f.1/'],
    ['loopback, octal', 'http://017700000001/'],
    ['loopback, short', 'http://127.1/'],
    ['loopback, percent-encoded', 'http://%31%32%37.0.0.1/'],
    ['unspecified', 'http://0.0.0.0/'],
    ['unspecified, short', 'http://0/'],
    ['private 10/8', 'http://10.1.2.3/'],
    ['private 172.16/12', 'http://172.31.255.254/'],
    ['private 192.168/16', 'https://192.168.1.1/'],
    ['cloud metadata', 'http://169.254.169.254/latest/meta-data/'],
    ['carrier-grade NAT', 'http://100.64.0.1/'],
    ['multicast', 'http://224.0.0.1/'],
    ['broadcast', 'http://255.255.255.255/'],
    ['reserved 240/4', 'http://240.0.0.1/'],
    ['benchmarking', 'http://198.18.0.1/'],
    ['documentation', 'http://192.0.2.1/'],
    ['documentation 2', 'http://203.0.113.9/'],
    ['IPv6 loopback', 'http://[::1]/'],
    ['IPv6 unspecified', 'http://[::]/'],
    ['IPv6 unique-local', 'http://[fd12:3456::1]/'],
    ['IPv6 unique-local fc00', 'http://[fc00::1]/'],
    ['IPv6 link-local', 'http://[fe80::1]/'],
    ['IPv6 multicast', 'http://[ff02::1]/'],
    ['IPv6 documentation', 'http://[2001:db8::1]/'],
    ['IPv4-mapped loopback', 'http://[::ffff:127.0.0.1]/'],
    ['IPv4-mapped private, hex', 'http://[::ffff:a00:1]/'],
    ['IPv4-mapped metadata', 'http://[::ffff:169.254.169.254]/'],
    ['IPv4-translated loopback', 'http://[::ffff:0:7f00:1]/'],
    ['IPv4-compatible loopback', 'http://[::127.0.0.1]/'],
    ['IPv4-compatible public', 'http://[::8.8.8.8]/'],
    ['NAT64 of private', 'http://[64:ff9b::10.0.0.1]/'],
    ['NAT64 local-use', 'http://[64:ff9b:1::1]/'],
    ['6to4 of loopback', 'http://[2002:7f00:1::1]/'],
    ['6to4 of private', 'http://[2002:c0a8:101::1]/'],
    ['Teredo', 'http://[2001::1]/'],
  ])('refuses a literal %s address (%s)', async (_name, url) => {
    const calls: string[] = [];
    const error = await cutoutFailure(fetchImage(url, { ...BASE, lookup: stubLookup({}, calls) }), 'url_not_allowed');
    expect(error.message).toContain('not a public address');
    expect(calls).toEqual([]);
  });

  it.each([
    ['a private address', '10.0.0.7'],
    ['a private address among public ones', ['93.184.216.34', '10.0.0.7']],
    ['the metadata address', '169.254.169.254'],
    ['IPv6 loopback', '::1'],
    ['an IPv4-mapped private address', '::ffff:192.168.0.1'],
    ['IPv6 unique-local', 'fd00::1'],
  ])('refuses a name that resolves to %s', async (_name, answer) => {
    const lookup = stubLookup({ 'images.example.com': answer });
    const error = await cutoutFailure(fetchImage('http://images.example.com/cat.png', { ...BASE, lookup }), 'url_not_allowed');
    expect(error.message).toContain('images.example.com resolves to a non-public address');
    // The caller must not learn the internal address.
    for (const address of [answer].flat()) expect(error.message).not.toContain(address);
  });

  it('fetches from a name that resolves to a checked address', async () => {
    const server = await serveImage();
    const lookup = stubLookup({ 'public.test': '127.0.0.1' });
    const bytes = await fetchImageWithPolicy(`http://public.test:${server.port}/`, { ...BASE, lookup }, loopbackCountsAsPublic);
    expect(bytes.equals(IMAGE)).toBe(true);
    expect(server.requests[0].headers.host).toBe(`public.test:${server.port}`);
  });

  it('connects only to the address it checked, whatever DNS answers next (rebinding)', async () => {
    const server = await serveImage();
    const calls: string[] = [];
    let answered = 0;
    const lookup = stubLookup({ 'public.test': () => (answered++ === 0 ? '127.0.0.1' : '10.0.0.1') }, calls);
    const bytes = await fetchImageWithPolicy(`http://public.test:${server.port}/`, { ...BASE, lookup }, loopbackCountsAsPublic);
    expect(bytes.equals(IMAGE)).toBe(true);
    expect(calls).toEqual(['public.test']);
  });

  it('refuses a redirect to a private address before connecting, even after an allowed first hop', async () => {
    const server = await serve((_req, res) => res.writeHead(302, { Location: `http://internal.test:${server.port}/secret` }).end());
    const lookup = stubLookup({ 'public.test': '127.0.0.1', 'internal.test': '10.0.0.1' });
    const error = await cutoutFailure(
      fetchImageWithPolicy(`http://public.test:${server.port}/`, { ...BASE, lookup }, loopbackCountsAsPublic),
      'url_not_allowed',
    );
    expect(error.message).toBe('image_url redirect 1: host internal.test resolves to a non-public address (private).');
    expect(server.requests).toHaveLength(1);
  });

  it('refuses a redirect to a literal metadata address', async () => {
    const server = await serve((_req, res) => res.writeHead(301, { Location: 'http://169.254.169.254/latest/meta-data/' }).end());
    const lookup = stubLookup({ 'public.test': '127.0.0.1' });
    const error = await cutoutFailure(
      fetchImageWithPolicy(`http://public.test:${server.port}/`, { ...BASE, lookup }, loopbackCountsAsPublic),
      'url_not_allowed',
    );
    expect(error.message).toContain('image_url redirect 1: 169.254.169.254 is not a public address');
  });

  it.each([
    ['a file: URL', 'file:///etc/passwd', 'image_url redirect 1 must use http: or https:, not file:'],
    ['a URL with credentials', 'http://admin:hunter2@127.0.0.1/', 'image_url redirect 1 must not contain a user name or password.'],
    ['a denied host', 'http://blocked.test/', 'image_url redirect 1: host blocked.test is on the deny list.'],
  ])('refuses a redirect to %s', async (_name, location, detail) => {
    const server = await serve((_req, res) => res.writeHead(307, { Location: location }).end());
    const options = { ...BASE, allowPrivate: true, denyHosts: ['blocked.test'] };
    const error = await cutoutFailure(fetchImage(`http://127.0.0.1:${server.port}/`, options), 'url_not_allowed');
    expect(error.message).toBe(detail);
    expect(server.requests).toHaveLength(1);
  });

  it('follows up to maxRedirects redirects and fails beyond', async () => {
    // /hop/3 redirects to /hop/2 … /hop/0 answers the image.
    const server = await serve((req, res) => {
      const left = Number(req.url!.split('/')[2]);
      if (left === 0) res.writeHead(200).end(IMAGE);
      else res.writeHead(left % 2 === 0 ? 308 : 303, { Location: `/hop/${left - 1}` }).end();
    });
    const url = `http://127.0.0.1:${server.port}/hop/3`;
    const bytes = await fetchImage(url, { ...BASE, allowPrivate: true, maxRedirects: 3 });
    expect(bytes.equals(IMAGE)).toBe(true);
    expect(server.requests).toHaveLength(4);

    const error = await cutoutFailure(fetchImage(url, { ...BASE, allowPrivate: true, maxRedirects: 2 }), 'upstream_fetch_failed');
    expect(error.message).toBe('image_url redirected more than 2 times.');
    expect(server.requests).toHaveLength(4 + 3);
  });

  it('fails with upstream_fetch_failed on a 404 and names the status', async () => {
    const server = await serve((_req, res) => res.writeHead(404).end('no such cat'));
    const error = await cutoutFailure(fetchImage(`http://127.0.0.1:${server.port}/`, { ...BASE, allowPrivate: true }), 'upstream_fetch_failed');
    expect(error.message).toBe('image_url answered HTTP 404.');
  });

  it('wraps a refused connection with its cause and a short reason', async () => {
    const server = await serveImage();
    await server.close();
    const error = await cutoutFailure(fetchImage(`http://127.0.0.1:${server.port}/`, { ...BASE, allowPrivate: true }), 'upstream_fetch_failed');
    expect(error.message).toBe('image_url could not be fetched (ECONNREFUSED).');
    expect(error.cause).toBeInstanceOf(Error);
  });

  it('fails on a body cut short', async () => {
    const server = await serve((_req, res) => {
      res.writeHead(200, { 'Content-Length': '100' });
      res.write(IMAGE, () => res.destroy());
    });
    await cutoutFailure(fetchImage(`http://127.0.0.1:${server.port}/`, { ...BASE, allowPrivate: true }), 'upstream_fetch_failed');
  });

  it('fails with upstream_fetch_failed when the name does not resolve', async () => {
    const error = await cutoutFailure(fetchImage('http://nowhere.test/', { ...BASE, lookup: stubLookup({}) }), 'upstream_fetch_failed');
    expect(error.message).toBe('image_url: host nowhere.test could not be resolved (ENOTFOUND).');
  });

  it('times out a server that trickles its body, within the deadline', async () => {
    const server = await serve((req, res) => {
      res.writeHead(200, { 'Content-Type': 'image/png' });
      const timer = setInterval(() => res.write('x'), 50);
      req.socket.on('close', () => clearInterval(timer));
    });
    const started = performance.now();
    const error = await cutoutFailure(
      fetchImage(`http://127.0.0.1:${server.port}/`, { ...BASE, allowPrivate: true, timeoutMs: 300 }),
      'upstream_timeout',
    );
    // The body keeps coming, so only a deadline over the whole fetch (not one per read) ends it.
    const elapsed = performance.now() - started;
    expect(elapsed).toBeGreaterThanOrEqual(290);
    expect(elapsed).toBeLessThan(CEILING_MS);
    expect(error.message).toBe('image_url did not finish within 300 ms.');
  });

  it('times out a server that never answers', async () => {
    const server = await serve(() => {});
    const started = performance.now();
    const error = await cutoutFailure(fetchImage(`http://127.0.0.1:${server.port}/`, { ...BASE, allowPrivate: true, timeoutMs: 300 }), 'upstream_timeout');
    expect(error.message).toBe('image_url did not finish within 300 ms.');
    expect(performance.now() - started).toBeLessThan(CEILING_MS);
  });

  it("stops when the caller's signal aborts", async () => {
    // The caller gives up once the server holds the request (and never answers it); the
    // deadline is far beyond the test's, so only the abort can end the fetch in time.
    const caller = new AbortController();
    const server = await serve(() => caller.abort());
    const error = await cutoutFailure(
      fetchImage(`http://127.0.0.1:${server.port}/`, { ...BASE, allowPrivate: true, timeoutMs: 600_000, signal: caller.signal }),
      'upstream_fetch_failed',
    );
    expect(error.message).toBe('The fetch was cancelled.');
    expect(server.requests).toHaveLength(1);
  });

  it('refuses a Content-Length over maxBytes without waiting for the body', async () => {
    // The body never completes: only the up-front check can answer before the deadline.
    const server = await serve((_req, res) => {
      res.writeHead(200, { 'Content-Length': '1000000' });
      res.write(IMAGE);
    });
    const error = await cutoutFailure(
      fetchImage(`http://127.0.0.1:${server.port}/`, { ...BASE, allowPrivate: true, timeoutMs: 600_000 }),
      'payload_too_large',
    );
    expect(error.message).toBe('image_url: the fetched image exceeds 1024 bytes.');
  });

  it('stops a chunked body as soon as it passes maxBytes', async () => {
    // An endless body: only counting while streaming can answer before the deadline.
    const server = await serve((req, res) => {
      res.writeHead(200, { 'Content-Type': 'image/png' });
      const timer = setInterval(() => res.write(Buffer.alloc(256)), 5);
      req.socket.on('close', () => clearInterval(timer));
    });
    // The deadline is far beyond the test's: payload_too_large can only come from the count.
    await cutoutFailure(fetchImage(`http://127.0.0.1:${server.port}/`, { ...BASE, allowPrivate: true, timeoutMs: 600_000 }), 'payload_too_large');
  });

  it('accepts a body of exactly maxBytes', async () => {
    const body = Buffer.alloc(1024, 7);
    const server = await serve((_req, res) => {
      res.writeHead(200);
      res.write(body.subarray(0, 500));
      res.end(body.subarray(500));
    });
    const bytes = await fetchImage(`http://127.0.0.1:${server.port}/`, { ...BASE, allowPrivate: true });
    expect(bytes.equals(body)).toBe(true);
  });

  it.each([
    ['ftp://example.com/cat.png', 'must use http: or https:, not ftp:'],
    ['file:///etc/passwd', 'must use http: or https:, not file:'],
    ['data:image/png;base64,iVBORw0KGgo=', 'must use http: or https:, not data:'],
    ['javascript:alert(1)', 'must use http: or https:, not javascript:'],
    ['gopher://127.0.0.1:6379/_INFO', 'must use http: or https:, not gopher:'],
    ['not a url', 'is not a valid absolute URL'],
    ['/relative/cat.png', 'is not a valid absolute URL'],
  ])('refuses %s', async (url, detail) => {
    const error = await cutoutFailure(fetchImage(url, { ...BASE, allowPrivate: true }), 'url_not_allowed');
    expect(error.message).toContain(`image_url ${detail}`);
  });

  it('refuses credentials in the URL', async () => {
    const server = await serveImage();
    const error = await cutoutFailure(
      fetchImage(`http://user:secret@127.0.0.1:${server.port}/`, { ...BASE, allowPrivate: true }),
      'url_not_allowed',
    );
    expect(error.message).toBe('image_url must not contain a user name or password.');
    expect(server.requests).toHaveLength(0);
  });

  describe('host lists', () => {
    const names = ['img.example.com', 'a.b.example.com', 'example.com', 'evilexample.com', 'bad.example.com', 'cdn.example.net', 'x.cdn.example.net'];
    const lookup = stubLookup(Object.fromEntries(names.map((name) => [name, '127.0.0.1'])));

    async function outcome(host: string, lists: Pick<FetchImageOptions, 'allowHosts' | 'denyHosts'>): Promise<string> {
      const server = await serveImage();
      const url = `http://${host}:${server.port}/`;
      return fetchImage(url, { ...BASE, allowPrivate: true, lookup, ...lists }).then(
        () => 'fetched',
        (error: CutoutError) => error.code,
      );
    }

    it('allows exact names and *.suffix patterns only', async () => {
      const lists = { allowHosts: ['*.example.com', 'CDN.example.net.'] };
      expect(await outcome('img.example.com', lists)).toBe('fetched');
      expect(await outcome('a.b.example.com', lists)).toBe('fetched');
      expect(await outcome('cdn.example.net', lists)).toBe('fetched');
      expect(await outcome('example.com', lists)).toBe('url_not_allowed');
      expect(await outcome('evilexample.com', lists)).toBe('url_not_allowed');
      expect(await outcome('x.cdn.example.net', lists)).toBe('url_not_allowed');
    });

    it('checks the deny list first, whatever the case or trailing dot', async () => {
      const lists = { allowHosts: ['*.example.com'], denyHosts: ['bad.example.com'] };
      expect(await outcome('bad.example.com', lists)).toBe('url_not_allowed');
      expect(await outcome('BAD.Example.com.', { denyHosts: ['bad.example.com'] })).toBe('url_not_allowed');
      expect(await outcome('bad.example.com', { denyHosts: ['*.example.com'] })).toBe('url_not_allowed');
      expect(await outcome('img.example.com', lists)).toBe('fetched');
    });

    it('allows every host when the allow list is empty', async () => {
      expect(await outcome('evilexample.com', { allowHosts: [] })).toBe('fetched');
    });
  });

  it('verifies the TLS certificate against the host name, not the pinned address', async () => {
    const serverNames: string[] = [];
    const context = createSecureContext({ key: TEST_KEY, cert: TEST_CERT });
    const server = await serve(
      (_req, res) => res.writeHead(200).end(IMAGE),
      (listener) =>
        https.createServer(
          {
            key: TEST_KEY,
            cert: TEST_CERT,
            SNICallback: (name, done) => {
              serverNames.push(name);
              done(null, context);
            },
          },
          listener,
        ),
    );
    const lookup = stubLookup({ 'public.test': '127.0.0.1' });
    const error = await cutoutFailure(
      fetchImageWithPolicy(`https://public.test:${server.port}/`, { ...BASE, lookup }, loopbackCountsAsPublic),
      'upstream_fetch_failed',
    );
    // The certificate is self-signed, so a verifying client must refuse it.
    expect(error.message).toBe('image_url could not be fetched (DEPTH_ZERO_SELF_SIGNED_CERT).');
    expect(serverNames).toEqual(['public.test']);
    expect(server.requests).toHaveLength(0);
  });
});

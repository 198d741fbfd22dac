import * as http from 'node:http';
import { AddressInfo } from 'node:net';
import * as zlib from 'node:zlib';
import { refusalReason } from '../src/outbound/address-policy';
import { OutboundError, OutboundRequestOptions, outboundRequest, PinnedAgents, Resolver } from '../src/outbound/outbound-http';

/**
 * The SSRF defences of src/outbound against real HTTP servers on loopback. The refusal cases run with private
 * addresses NOT allowed; where a test must reach its own loopback server it allows exactly that server's
 * address (allowedAddresses), so every other private address stays refused and the checks are still proved.
 */

interface TestServer {
  url: string;
  port: number;
  hits: http.IncomingMessage[];
  close(): Promise<void>;
}

async function startServer(handler: http.RequestListener, host = '127.0.0.1'): Promise<TestServer> {
  const hits: http.IncomingMessage[] = [];
  const server = http.createServer((req, res) => {
    hits.push(req);
    handler(req, res);
  });
  await new Promise<void>((resolve) => server.listen(0, host, resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://${host}:${port}`,
    port,
    hits,
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

const refusing = { allowPrivateAddresses: false };
const base = (overrides: Partial<OutboundRequestOptions> = {}): OutboundRequestOptions => ({
  policy: refusing,
  timeoutMs: 5_000,
  maxBodyBytes: 1024 * 1024,
  maxRedirects: 5,
  ...overrides,
});

/** The OutboundError a request fails with (the test fails if it succeeds). */
async function failure(url: string, options: OutboundRequestOptions): Promise<OutboundError> {
  const error = await outboundRequest(url, options).then(
    () => undefined,
    (caught: unknown) => caught,
  );
  if (!(error instanceof OutboundError)) throw new Error(`expected an OutboundError, got ${String(error)}`);
  return error;
}

describe('outbound HTTP (SSRF defences)', () => {
  let server: TestServer;
  /** A second loopback server, standing for an internal service that must never be reached. */
  let internal: TestServer;
  const onlyTestServer = () => ({ allowPrivateAddresses: false, allowedAddresses: ['127.0.0.1'] });

  beforeAll(async () => {
    internal = await startServer((_req, res) => res.end('internal secret'), '127.0.0.2');
    server = await startServer((req, res) => {
      const url = new URL(req.url!, 'http://test');
      const to = url.searchParams.get('to');
      if (url.pathname === '/redirect' && to) {
        res.writeHead(Number(url.searchParams.get('status') ?? 302), { location: to }).end();
      } else if (url.pathname.startsWith('/chain/')) {
        const left = Number(url.pathname.split('/')[2]);
        if (left === 0) res.end('end of chain');
        else res.writeHead(301, { location: `/chain/${left - 1}` }).end();
      } else if (url.pathname === '/bytes') {
        const size = Number(url.searchParams.get('size'));
        if (url.searchParams.get('chunked')) {
          res.write(Buffer.alloc(Math.floor(size / 2), 'a'));
          res.end(Buffer.alloc(size - Math.floor(size / 2), 'a'));
        } else {
          res.writeHead(200, { 'content-length': size }).end(Buffer.alloc(size, 'a'));
        }
      } else if (url.pathname === '/gzip-bomb') {
        res.writeHead(200, { 'content-encoding': 'gzip' }).end(zlib.gzipSync(Buffer.alloc(10 * 1024 * 1024)));
      } else if (url.pathname === '/gzip') {
        res.writeHead(200, { 'content-encoding': 'gzip' }).end(zlib.gzipSync('compressed hello'));
      } else if (url.pathname === '/silent') {
        // Never answers.
      } else if (url.pathname === '/trickle') {
        res.writeHead(200);
        const timer = setInterval(() => res.write('.'), 20);
        res.on('close', () => clearInterval(timer));
      } else if (url.pathname === '/echo') {
        const parts: Buffer[] = [];
        req.on('data', (part: Buffer) => parts.push(part));
        req.on('end', () =>
          res.writeHead(201, { 'content-type': 'application/json' }).end(
            JSON.stringify({
              method: req.method,
              host: req.headers.host,
              signature: req.headers['x-signature'] ?? null,
              body: Buffer.concat(parts).toString(),
            }),
          ),
        );
      } else {
        res.end('hello');
      }
    });
  });
  afterAll(async () => {
    await server.close();
    await internal.close();
  });

  describe('refuses literal addresses', () => {
    it.each([
      ['IPv4 loopback', 'http://127.0.0.1/', 'a loopback address'],
      ['IPv4 loopback elsewhere in 127/8', 'http://127.1.2.3/', 'a loopback address'],
      ['RFC 1918 10/8', 'http://10.0.0.1/', 'a private address'],
      ['RFC 1918 172.16/12', 'http://172.16.5.4/', 'a private address'],
      ['RFC 1918 192.168/16', 'http://192.168.1.1/', 'a private address'],
      ['link-local', 'http://169.254.10.10/', 'a link-local address'],
      ['carrier-grade NAT', 'http://100.64.0.1/', 'a carrier-grade NAT address'],
      ['unspecified', 'http://0.0.0.0/', 'the unspecified address'],
      ['broadcast', 'http://255.255.255.255/', 'the broadcast address'],
      ['multicast', 'http://224.0.0.1/', 'a multicast address'],
      ['reserved (documentation)', 'http://192.0.2.1/', 'a reserved address'],
      ['reserved (class E)', 'http://240.0.0.1/', 'a reserved address'],
      ['AWS/GCP/Azure metadata', 'http://169.254.169.254/latest/meta-data/', 'a cloud metadata address'],
      ['AWS ECS task metadata', 'http://169.254.170.2/v2/credentials', 'a cloud metadata address'],
      ['Alibaba metadata', 'http://100.100.100.200/latest/meta-data/', 'a cloud metadata address'],
      ['Azure WireServer (a public address)', 'http://168.63.129.16/', 'a cloud metadata address'],
      ['IPv6 loopback', 'http://[::1]/', 'a loopback address'],
      ['IPv6 unspecified', 'http://[::]/', 'the unspecified address'],
      ['IPv6 link-local', 'http://[fe80::1]/', 'a link-local address'],
      ['IPv6 unique-local', 'http://[fc00::1]/', 'a unique-local address'],
      ['IPv6 unique-local fd00::/8', 'http://[fd12:3456::1]/', 'a unique-local address'],
      ['IPv6 multicast', 'http://[ff02::1]/', 'a multicast address'],
      ['IPv6 documentation', 'http://[2001:db8::1]/', 'a reserved address'],
      ['AWS IPv6 metadata', 'http://[fd00:ec2::254]/latest/meta-data/', 'a cloud metadata address'],
      ['IPv4-mapped loopback', 'http://[::ffff:127.0.0.1]/', 'a loopback address'],
      ['IPv4-mapped private', 'http://[::ffff:10.0.0.1]/', 'a private address'],
      ['IPv4-mapped metadata', 'http://[::ffff:169.254.169.254]/', 'a cloud metadata address'],
      ['IPv4-mapped in hex', 'http://[::ffff:7f00:1]/', 'a loopback address'],
      ['IPv4-compatible (deprecated)', 'http://[::127.0.0.1]/', 'a reserved address'],
      ['IPv4-translated', 'http://[::ffff:0:7f00:1]/', 'a loopback address'],
      ['NAT64 of a private address', 'http://[64:ff9b::10.0.0.1]/', 'a private address'],
      ['NAT64 of metadata', 'http://[64:ff9b::a9fe:a9fe]/', 'a cloud metadata address'],
      ['6to4 of loopback', 'http://[2002:7f00:1::1]/', 'a loopback address'],
      ['Teredo', 'http://[2001:0:4136:e378:8000:63bf:3fff:fdd2]/', 'a reserved address'],
    ])('%s (%s)', async (_name, url, reason) => {
      const error = await failure(url, base());
      expect(error.code).toBe('forbidden-address');
      expect(error.message).toContain(`is ${reason}`);
    });

    it.each([
      ['decimal', 'http://2130706433/'],
      ['hexadecimal, two parts', 'http://0x7f.1/'],
      ['hexadecimal, one number', 'http://0x7f000001/'],
      ['octal', 'http://0177.0.0.1/'],
      ['short form', 'http://127.1/'],
      ['mixed', 'http://0x7f.0.0.01/'],
    ])('in %s notation (%s), as the loopback address it is', async (_name, url) => {
      const error = await failure(url, base());
      expect(error).toMatchObject({ code: 'forbidden-address', message: '127.0.0.1 is a loopback address' });
    });

    it('refuses a public-looking spelling of the metadata address (decimal 2852039166)', async () => {
      expect(await failure('http://2852039166/', base())).toMatchObject({
        code: 'forbidden-address',
        message: '169.254.169.254 is a cloud metadata address',
      });
    });
  });

  describe('refuses host names that resolve to such addresses', () => {
    it('localhost, through the system resolver', async () => {
      const error = await failure(`http://localhost:${server.port}/`, base());
      expect(error).toMatchObject({
        code: 'forbidden-address',
        message: expect.stringMatching(/^localhost resolves to a loopback address$/),
      });
      expect(server.hits).toHaveLength(0);
    });

    it.each([
      ['127.0.0.1', 'a loopback address'],
      ['10.1.2.3', 'a private address'],
      ['169.254.169.254', 'a cloud metadata address'],
      ['::1', 'a loopback address'],
      ['::ffff:192.168.0.1', 'a private address'],
    ])('a name resolving to %s', async (address, reason) => {
      const resolver: Resolver = async () => [{ address, family: address.includes(':') ? 6 : 4 }];
      const error = await failure('http://internal.example.test/', base({ resolver }));
      expect(error).toMatchObject({ code: 'forbidden-address', message: `internal.example.test resolves to ${reason}` });
    });

    it('a name resolving to a public address and a private one (the private one refuses it)', async () => {
      const resolver: Resolver = async () => [
        { address: '93.184.216.34', family: 4 },
        { address: '127.0.0.1', family: 4 },
      ];
      expect(await failure('http://mixed.example.test/', base({ resolver }))).toMatchObject({ code: 'forbidden-address' });
    });

    it('a name that does not resolve is a dns error', async () => {
      const resolver: Resolver = async () => {
        throw Object.assign(new Error('getaddrinfo ENOTFOUND'), { code: 'ENOTFOUND' });
      };
      expect(await failure('http://nowhere.example.test/', base({ resolver }))).toMatchObject({
        code: 'dns',
        message: 'nowhere.example.test could not be resolved',
      });
    });
  });

  describe('pins the connection to the address it checked', () => {
    it('resolves the name once, connects to that address, and still sends the name as Host', async () => {
      const answers = ['127.0.0.1', '127.0.0.2'];
      const asked: string[] = [];
      // A rebinding resolver: a second question would get the internal server's address.
      const resolver: Resolver = async (hostname) => {
        asked.push(hostname);
        return [{ address: answers.shift()!, family: 4 }];
      };
      const response = await outboundRequest(
        `http://pinned.example.test:${server.port}/echo`,
        base({ resolver, policy: onlyTestServer() }),
      );
      expect(asked).toEqual(['pinned.example.test']);
      expect(response.status).toBe(201);
      expect(JSON.parse(response.body.toString()).host).toBe(`pinned.example.test:${server.port}`);
      expect(internal.hits).toHaveLength(0);
    });
  });

  describe('redirects', () => {
    const via = (to: string, status = 302) => `${server.url}/redirect?status=${status}&to=${encodeURIComponent(to)}`;

    it.each([
      ['a loopback address', () => `${internal.url}/`],
      ['the metadata address', () => 'http://169.254.169.254/latest/meta-data/iam/security-credentials/'],
      ['a private address in decimal', () => 'http://167772161/'],
      ['IPv6 loopback', () => `http://[::1]:${internal.port}/`],
    ])('refuses a redirect from an allowed server to %s, and never reaches it', async (_name, target) => {
      const hitsBefore = internal.hits.length;
      const error = await failure(via(target()), base({ policy: onlyTestServer() }));
      expect(error.code).toBe('forbidden-address');
      expect(internal.hits.length).toBe(hitsBefore);
    });

    it('refuses a redirect to a name that resolves to a private address', async () => {
      const resolver: Resolver = async () => [{ address: '127.0.0.2', family: 4 }];
      const error = await failure(via(`http://internal.example.test:${internal.port}/`), base({ policy: onlyTestServer(), resolver }));
      expect(error).toMatchObject({ code: 'forbidden-address', message: 'internal.example.test resolves to a loopback address' });
      expect(internal.hits).toHaveLength(0);
    });

    it('refuses a redirect to another scheme', async () => {
      expect(await failure(via('file:///etc/passwd'), base({ policy: onlyTestServer() }))).toMatchObject({ code: 'invalid-url' });
      expect(await failure(via('gopher://127.0.0.1:6379/_INFO'), base({ policy: onlyTestServer() }))).toMatchObject({
        code: 'invalid-url',
      });
    });

    it('follows at most maxRedirects (5) redirects', async () => {
      const response = await outboundRequest(`${server.url}/chain/5`, base({ policy: onlyTestServer(), maxRedirects: 5 }));
      expect(response).toMatchObject({ status: 200, url: `${server.url}/chain/0` });
      expect(response.body.toString()).toBe('end of chain');
      const error = await failure(`${server.url}/chain/6`, base({ policy: onlyTestServer(), maxRedirects: 5 }));
      expect(error).toMatchObject({ code: 'too-many-redirects', message: 'more than 5 redirects' });
    });

    it('with maxRedirects 0, answers the redirect itself', async () => {
      const response = await outboundRequest(via(`${server.url}/`, 307), base({ policy: onlyTestServer(), maxRedirects: 0 }));
      expect(response.status).toBe(307);
      expect(response.headers.location).toBe(`${server.url}/`);
    });

    it('does not forward custom headers to another origin', async () => {
      const sameOrigin = await outboundRequest(
        via(`${server.url}/echo`, 307),
        base({ policy: onlyTestServer(), headers: { 'x-signature': 's1' } }),
      );
      expect(JSON.parse(sameOrigin.body.toString()).signature).toBe('s1');
      const resolver: Resolver = async () => [{ address: '127.0.0.1', family: 4 }];
      const otherOrigin = await outboundRequest(
        via(`http://other.example.test:${server.port}/echo`, 307),
        base({ policy: onlyTestServer(), resolver, headers: { 'x-signature': 's1' } }),
      );
      expect(JSON.parse(otherOrigin.body.toString()).signature).toBeNull();
    });
  });

  describe('limits', () => {
    const small = () => base({ policy: onlyTestServer(), maxBodyBytes: 1000 });

    it.each([
      ['with Content-Length', ''],
      ['chunked', '&chunked=1'],
    ])('accepts a body of exactly maxBodyBytes and refuses one byte more (%s)', async (_name, chunked) => {
      expect((await outboundRequest(`${server.url}/bytes?size=1000${chunked}`, small())).body).toHaveLength(1000);
      expect(await failure(`${server.url}/bytes?size=1001${chunked}`, small())).toMatchObject({
        code: 'too-large',
        message: 'the response is larger than 1000 bytes',
      });
    });

    it('refuses a compressed body that expands past the cap, and decompresses one that does not', async () => {
      const error = await failure(`${server.url}/gzip-bomb`, base({ policy: onlyTestServer(), maxBodyBytes: 5 * 1024 * 1024 }));
      expect(error).toMatchObject({ code: 'too-large', message: 'the response is larger than 5 MiB' });
      expect((await outboundRequest(`${server.url}/gzip`, small())).body.toString()).toBe('compressed hello');
    });

    it('with overflow "truncate", keeps the first maxBodyBytes and says so', async () => {
      const response = await outboundRequest(`${server.url}/bytes?size=5000`, { ...small(), overflow: 'truncate' });
      expect(response).toMatchObject({ status: 200, truncated: true });
      expect(response.body).toHaveLength(1000);
    });

    it('times out a server that never answers, and one that never finishes its body', async () => {
      const options = base({ policy: onlyTestServer(), timeoutMs: 300 });
      expect(await failure(`${server.url}/silent`, options)).toMatchObject({ code: 'timeout', message: 'no complete answer within 0.3 s' });
      expect(await failure(`${server.url}/trickle`, options)).toMatchObject({ code: 'timeout' });
    });

    it('refuses http: in https-only mode, and schemes other than http(s) always', async () => {
      expect(await failure(`${server.url}/`, base({ policy: onlyTestServer(), httpsOnly: true }))).toMatchObject({
        code: 'invalid-url',
        message: 'only https: URLs are allowed, not http:',
      });
      expect(await failure('ftp://example.com/file', base())).toMatchObject({ code: 'invalid-url' });
      expect(await failure('not a url', base())).toMatchObject({ code: 'invalid-url' });
      expect(await failure(`http://user:secret@127.0.0.1:${server.port}/`, base({ policy: onlyTestServer() }))).toMatchObject({
        code: 'invalid-url',
      });
    });

    it('reports a refused connection without the address', async () => {
      const closed = await startServer(() => undefined);
      await closed.close();
      const error = await failure(`${closed.url}/`, base({ policy: onlyTestServer() }));
      expect(error).toMatchObject({ code: 'connection', message: `127.0.0.1:${closed.port} could not be reached (connection refused)` });
    });
  });

  describe('requests for webhooks', () => {
    it('POSTs a body with custom headers and returns the status and the body', async () => {
      const response = await outboundRequest(`${server.url}/echo`, {
        ...base({ policy: onlyTestServer(), maxRedirects: 0 }),
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-signature': 'sig' },
        body: '{"event":"call.created"}',
      });
      expect(response.status).toBe(201);
      expect(JSON.parse(response.body.toString())).toEqual({
        method: 'POST',
        host: `127.0.0.1:${server.port}`,
        signature: 'sig',
        body: '{"event":"call.created"}',
      });
    });

    it('reaches loopback with allowPrivateAddresses, but never the metadata address', async () => {
      const policy = { allowPrivateAddresses: true };
      expect((await outboundRequest(`${internal.url}/`, base({ policy }))).body.toString()).toBe('internal secret');
      expect(await failure('http://169.254.169.254/', base({ policy }))).toMatchObject({ code: 'forbidden-address' });
      expect(await failure('http://[fd00:ec2::254]/', base({ policy }))).toMatchObject({ code: 'forbidden-address' });
    });
  });

  describe('the address policy', () => {
    it('allows public unicast addresses, IPv4 and IPv6, and their IPv4-mapped and NAT64 forms', () => {
      for (const address of ['93.184.216.34', '8.8.8.8', '2606:4700:4700::1111', '::ffff:93.184.216.34', '64:ff9b::808:808']) {
        expect({ address, reason: refusalReason(address, refusing) }).toEqual({ address, reason: undefined });
      }
    });

    it('allows exactly the listed addresses, and not their neighbours', () => {
      const policy = { allowPrivateAddresses: false, allowedAddresses: ['127.0.0.1'] };
      expect(refusalReason('127.0.0.1', policy)).toBeUndefined();
      expect(refusalReason('::ffff:127.0.0.1', policy)).toBeUndefined();
      expect(refusalReason('127.0.0.2', policy)).toBe('a loopback address');
      expect(refusalReason('::1', policy)).toBe('a loopback address');
    });
  });
});

describe('outbound HTTP keep-alive (PinnedAgents)', () => {
  const connections = new Map<string, number>();
  const servers: http.Server[] = [];
  let port = 0;

  beforeAll(async () => {
    // The same port on two loopback addresses, standing for the two addresses a name resolves to in turn.
    for (const host of ['127.0.0.1', '127.0.0.3']) {
      const server = http.createServer((_req, res) => res.end(host));
      server.on('connection', () => connections.set(host, (connections.get(host) ?? 0) + 1));
      await new Promise<void>((resolve) => server.listen(port, host, resolve));
      port = (server.address() as AddressInfo).port;
      servers.push(server);
    }
  });
  afterAll(async () => {
    for (const server of servers) {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    }
  });

  it('reuses a connection for the address it was opened to, and opens another when the name resolves elsewhere', async () => {
    const agents = new PinnedAgents();
    let answer = '127.0.0.1';
    const resolver: Resolver = async () => [{ address: answer, family: 4 }];
    const options = base({ policy: { allowPrivateAddresses: true }, resolver, agents });
    try {
      const bodies: string[] = [];
      for (let index = 0; index < 3; index++)
        bodies.push((await outboundRequest(`http://hooks.example.com:${port}/`, options)).body.toString());
      answer = '127.0.0.3';
      bodies.push((await outboundRequest(`http://hooks.example.com:${port}/`, options)).body.toString());
      expect(bodies).toEqual(['127.0.0.1', '127.0.0.1', '127.0.0.1', '127.0.0.3']);
      expect(Object.fromEntries(connections)).toEqual({ '127.0.0.1': 1, '127.0.0.3': 1 });
      // The check still runs on every request: a reused agent does not skip it.
      answer = '127.0.0.1';
      const refused = await failure(`http://hooks.example.com:${port}/`, { ...options, policy: refusing });
      expect(refused.code).toBe('forbidden-address');
    } finally {
      agents.destroy();
    }
  });
});

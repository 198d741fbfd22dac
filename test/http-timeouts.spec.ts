import * as http from 'node:http';
import { AddressInfo, connect, Socket } from 'node:net';
import { answerClientErrors } from '../src/common/client-error';
import { applyHttpTimeouts, HTTP_TIMEOUTS } from '../src/common/http-timeouts';
import { createTestContext, listenOnLoopback } from './helpers';

describe('HTTP server timeouts', () => {
  it('are set on the server the app creates: keep-alive beyond load balancers, no whole-request limit', async () => {
    const context = await createTestContext();
    try {
      const server: http.Server = context.app.getHttpServer();
      expect(server.keepAliveTimeout).toBe(65_000);
      expect(server.headersTimeout).toBeGreaterThan(server.keepAliveTimeout);
      expect(server.headersTimeout).toBeLessThanOrEqual(120_000); // still a bound on slowloris
      expect(server.requestTimeout).toBe(0); // Node's default, 300 s, cut 200 MiB uploads on slow links
      expect(server.timeout).toBe(HTTP_TIMEOUTS.idleMs);
      expect(server.timeout).toBeGreaterThan(server.keepAliveTimeout);
    } finally {
      await context.close();
    }
  });

  /**
   * The same settings, scaled down to seconds, on a bare server that counts the bytes of each body. Node checks
   * the request and headers timeouts every `connectionsCheckingInterval` (30 s by default): 50 ms here.
   */
  describe('scaled down (idle 2.5 s, headers 1 s)', () => {
    const servers: http.Server[] = [];
    const start = async (options: http.ServerOptions, timeouts?: Parameters<typeof applyHttpTimeouts>[1]) => {
      const server = http.createServer({ connectionsCheckingInterval: 50, ...options }, (request, response) => {
        let bytes = 0;
        request.on('data', (chunk: Buffer) => (bytes += chunk.length));
        request.on('end', () => response.end(String(bytes)));
      });
      answerClientErrors(server);
      if (timeouts) applyHttpTimeouts(server, timeouts);
      servers.push(server);
      await listenOnLoopback(server);
      return (server.address() as AddressInfo).port;
    };
    afterAll(() => Promise.all(servers.map((server) => new Promise((resolve) => server.close(resolve)))));

    const scaled = { keepAliveMs: 500, headersMs: 1_000, requestMs: 0, idleMs: 2_500 };

    /** Sends a POST whose body is `chunks` bytes, one every `intervalMs`; resolves with what came back before the socket closed. */
    function slowPost(port: number, chunks: number, intervalMs: number, contentLength = chunks): Promise<string> {
      return new Promise((resolve) => {
        const socket: Socket = connect(port, '127.0.0.1');
        let answer = '';
        socket.on('data', (data) => (answer += data));
        socket.on('close', () => resolve(answer));
        socket.on('error', () => undefined);
        socket.write(`POST / HTTP/1.1\r\nHost: test\r\nContent-Length: ${contentLength}\r\nConnection: close\r\n\r\n`);
        let sent = 0;
        const timer = setInterval(() => {
          if (socket.destroyed || sent === chunks) return clearInterval(timer);
          socket.write('x');
          sent++;
        }, intervalMs);
      });
    }

    it('takes a body sent slowly and steadily for longer than a whole-request limit would allow', async () => {
      // Control: Node's request timeout (its default is 300 s; 1 s here) cuts the same upload with a 408.
      const limited = await start({ requestTimeout: 1_000, headersTimeout: 1_000 });
      expect(await slowPost(limited, 20, 100)).toMatch(/^HTTP\/1\.1 408 /);

      const port = await start({}, scaled);
      const answer = await slowPost(port, 20, 100); // 2 s in all, a byte every 100 ms
      expect(answer).toMatch(/^HTTP\/1\.1 200 /);
      expect(answer.endsWith('\r\n\r\n20')).toBe(true);
    });

    it('closes a connection whose upload stalled for longer than the idle timeout', async () => {
      const port = await start({}, scaled);
      const startedAt = Date.now();
      const answer = await slowPost(port, 2, 100, 1_000); // two bytes of a 1,000-byte body, then silence
      expect(answer).toBe('');
      expect(Date.now() - startedAt).toBeGreaterThanOrEqual(scaled.idleMs);
    });

    it('answers 408 in the error shape to a client that trickles its headers (slowloris)', async () => {
      const port = await start({}, scaled);
      const answer = await new Promise<string>((resolve) => {
        const socket = connect(port, '127.0.0.1');
        let received = '';
        socket.on('data', (data) => (received += data));
        socket.on('close', () => resolve(received));
        socket.write('GET / HTTP/1.1\r\nHost: test\r\n');
        const timer = setInterval(() => (socket.destroyed ? clearInterval(timer) : socket.write('X-Slow: 1\r\n')), 100);
      });
      expect(answer).toMatch(/^HTTP\/1\.1 408 Request Timeout\r\n/);
      expect(JSON.parse(answer.split('\r\n\r\n')[1])).toEqual({ statusCode: 408, error: 'Request Timeout', message: 'The request was not received in time' });
    });
  });
});

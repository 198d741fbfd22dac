import * as net from 'node:net';

/** A TCP proxy in front of the test database that can freeze: the database "hangs" without closing anything. */
export class FreezableProxy {
  private frozen = false;
  private readonly sockets = new Set<net.Socket>();
  private readonly server: net.Server;
  port = 0;
  /** Connections accepted so far. */
  connections = 0;

  constructor(target: { host: string; port: number }) {
    this.server = net.createServer((client) => {
      this.connections++;
      const upstream = net.connect(target.port, target.host);
      for (const socket of [client, upstream]) {
        this.sockets.add(socket);
        socket.on('close', () => this.sockets.delete(socket));
        socket.on('error', () => undefined);
      }
      client.on('data', (chunk) => !this.frozen && upstream.write(chunk));
      upstream.on('data', (chunk) => !this.frozen && client.write(chunk));
      client.on('close', () => upstream.destroy());
      upstream.on('close', () => client.destroy());
    });
  }

  async listen(): Promise<void> {
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    this.port = (this.server.address() as net.AddressInfo).port;
  }

  freeze(): void {
    this.frozen = true;
  }

  /** Thaws, dropping the connections that lost bytes while frozen (as a network partition would). */
  thaw(): void {
    this.frozen = false;
    for (const socket of this.sockets) socket.destroy();
  }

  async close(): Promise<void> {
    this.thaw();
    await new Promise((resolve) => this.server.close(resolve));
  }
}

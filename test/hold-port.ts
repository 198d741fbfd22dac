import * as net from 'node:net';

/** Holds a port on 127.0.0.1 (or finds it held by another program already): either way, taken until released. */
export async function holdPort(port: number): Promise<{ release: () => Promise<void> }> {
  const squatter = net.createServer();
  const held = await new Promise<boolean>((resolve) => {
    squatter.once('error', () => resolve(false));
    squatter.listen(port, '127.0.0.1', () => resolve(true));
  });
  return { release: () => (held ? new Promise<void>((resolve) => squatter.close(() => resolve())) : Promise.resolve()) };
}

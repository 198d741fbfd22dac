import { ListObjectsV2Command } from '@aws-sdk/client-s3';
import { execFileSync } from 'node:child_process';
import { mkdir, mkdtemp, readdir, rm } from 'node:fs/promises';
import { Agent, ClientRequest, request as httpRequest, IncomingMessage } from 'node:http';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import S3rver from 's3rver'; // typed in test/s3rver.d.ts
import { AppConfig, MAX_RECORDING_BYTES, StorageConfig } from '../src/config/config';
import { createS3Client } from '../src/recordings/s3-recording-storage';

/** A storage driver for the tests: its configuration, and a way to list what it holds. */
export interface TestStorage {
  name: 'local' | 's3';
  config: Partial<AppConfig>;
  /** Every object (or file) held, half-written uploads included. */
  objects(): Promise<string[]>;
  /**
   * Makes the store fail until `recover`: the local driver's recordings directory mounted read-only (EROFS;
   * needs root, as the full-disk test does), the S3 server stopped (connections refused).
   */
  fail(): Promise<void>;
  recover(): Promise<void>;
  stop(): Promise<void>;
}

const storageConfig = (overrides: Partial<StorageConfig>): StorageConfig => ({
  driver: 'local',
  s3: undefined,
  signingSecret: undefined,
  maxRecordingBytes: MAX_RECORDING_BYTES,
  ...overrides,
});

async function listFiles(directory: string): Promise<string[]> {
  const entries = await readdir(directory, { withFileTypes: true, recursive: true }).catch(() => []);
  return entries.filter((entry) => entry.isFile()).map((entry) => path.join(entry.parentPath, entry.name));
}

/** Files under a fresh data directory. */
export async function localTestStorage(maxRecordingBytes = MAX_RECORDING_BYTES): Promise<TestStorage> {
  const dataDir = await mkdtemp(path.join(tmpdir(), 'recordings-test-'));
  const recordings = path.join(dataDir, 'recordings');
  let mounted = false;
  const recover = async () => {
    if (mounted) execFileSync('umount', [recordings]);
    mounted = false;
  };
  return {
    name: 'local',
    config: { dataDir, storage: storageConfig({ maxRecordingBytes }) },
    objects: () => listFiles(recordings),
    async fail() {
      await mkdir(recordings, { recursive: true });
      execFileSync('mount', ['--bind', recordings, recordings]);
      mounted = true;
      execFileSync('mount', ['-o', 'remount,bind,ro', recordings]);
    },
    recover,
    async stop() {
      await recover();
      await rm(dataDir, { recursive: true, force: true });
    },
  };
}

/** A real S3-protocol server (s3rver) on loopback, with one bucket. */
export async function s3TestStorage(maxRecordingBytes = MAX_RECORDING_BYTES): Promise<TestStorage> {
  const directory = await mkdtemp(path.join(tmpdir(), 'recordings-s3-'));
  const dataDir = await mkdtemp(path.join(tmpdir(), 'recordings-test-'));
  const start = (port: number) =>
    new S3rver({ port, address: '127.0.0.1', silent: true, directory, configureBuckets: [{ name: 'recordings' }] });
  let server: S3rver | undefined = start(0);
  const { port } = await server.run();
  const s3 = {
    bucket: 'recordings',
    region: 'us-east-1',
    endpoint: `http://127.0.0.1:${port}`,
    publicEndpoint: undefined,
    accessKeyId: 'S3RVER',
    secretAccessKey: 'S3RVER',
    forcePathStyle: true,
  };
  const client = createS3Client(s3);
  return {
    name: 's3',
    config: { dataDir, storage: storageConfig({ driver: 's3', s3, maxRecordingBytes }) },
    async objects() {
      const listed = await client.send(new ListObjectsV2Command({ Bucket: 'recordings' }));
      return (listed.Contents ?? []).map((object) => object.Key!);
    },
    async fail() {
      await server?.close();
      server = undefined;
    },
    async recover() {
      if (server) return;
      // The same port and directory: the objects are still there.
      server = start(port);
      await server.run();
    },
    async stop() {
      client.destroy();
      await server?.close();
      await rm(directory, { recursive: true, force: true });
      await rm(dataDir, { recursive: true, force: true });
    },
  };
}

export interface RawResponse {
  status: number;
  headers: IncomingMessage['headers'];
  body: Buffer;
}

/**
 * A request written by hand: exact headers (a Content-Length that is a lie, or none: chunked) and a body
 * produced chunk by chunk. Resolves with the response even if the server answers before the body is sent; the
 * body stops once the connection is gone. `agent`: the connection's (one kept alive, say), else Node's default.
 */
export function rawRequest(
  url: string,
  method: string,
  headers: Record<string, string>,
  body?: AsyncIterable<Buffer> | Iterable<Buffer>,
  agent?: Agent,
): Promise<RawResponse> {
  return new Promise((resolve, reject) => {
    const request = httpRequest(url, { method, headers, agent });
    request.on('response', (response) => {
      const chunks: Buffer[] = [];
      response.on('data', (chunk: Buffer) => chunks.push(chunk));
      response.on('end', () => resolve({ status: response.statusCode!, headers: response.headers, body: Buffer.concat(chunks) }));
      response.on('error', reject);
    });
    // The server may answer and close while the body is still going out: that is not a failure here.
    request.on('error', (error: NodeJS.ErrnoException) => (['EPIPE', 'ECONNRESET'].includes(error.code ?? '') ? undefined : reject(error)));
    void (async () => {
      for await (const chunk of body ?? []) {
        if (request.destroyed) return;
        if (!request.write(chunk)) await drainedOrClosed(request);
      }
      request.end();
    })().catch(reject);
  });
}

function drainedOrClosed(request: ClientRequest): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      request.off('drain', done).off('close', done);
      resolve();
    };
    request.on('drain', done).on('close', done);
  });
}

/** `count` chunks of `size` bytes. */
export function* chunks(count: number, size = 64 * 1024): Generator<Buffer> {
  for (let index = 0; index < count; index++) yield Buffer.alloc(size, index % 251);
}

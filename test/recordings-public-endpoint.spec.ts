import { ConfigError, loadConfig, S3StorageConfig } from '../src/config/config';
import { FreezableProxy } from './freezable-proxy';
import { createTestContext, TestAccount, TestContext } from './helpers';
import { s3TestStorage, TestStorage } from './recordings-helpers';

/**
 * S3_PUBLIC_ENDPOINT: the service reaches the store at S3_ENDPOINT (in Docker Compose, `http://minio:9000`, a name
 * only the containers resolve) and presigns playback URLs for the address browsers use. Here the "public address"
 * is a TCP proxy in front of the same s3rver, on another port.
 */
describe('recordings on S3 behind a public endpoint (S3_PUBLIC_ENDPOINT)', () => {
  let storage: TestStorage;
  let publicAddress: FreezableProxy;
  let context: TestContext;
  let owner: TestAccount;

  beforeAll(async () => {
    storage = await s3TestStorage();
    const s3 = storage.config.storage!.s3!;
    const internal = new URL(s3.endpoint!);
    publicAddress = new FreezableProxy({ host: internal.hostname, port: Number(internal.port) });
    await publicAddress.listen();
    const withPublicEndpoint: S3StorageConfig = { ...s3, publicEndpoint: `http://127.0.0.1:${publicAddress.port}` };
    context = await createTestContext({ ...storage.config, storage: { ...storage.config.storage!, s3: withPublicEndpoint } });
    owner = await context.createAccount();
  });
  afterAll(async () => {
    await context?.close();
    await publicAddress?.close();
    await storage?.stop();
  });

  it('presigns playback URLs on the public endpoint, which plays the recording; uploads still go to S3_ENDPOINT', async () => {
    const callId = (await context.as(owner).post('/calls').send({ name: 'Asha Rao' }).expect(201)).body.id;
    const audio = Buffer.alloc(4096, 7);
    await context.as(owner).put(`/calls/${callId}/recording`).set('Content-Type', 'audio/mpeg').send(audio).expect(204);
    expect(publicAddress.connections).toBe(0); // the upload did not go through the public address
    const { url } = (await context.as(owner).get(`/calls/${callId}/recording`).expect(200)).body;
    expect(new URL(url).host).toBe(`127.0.0.1:${publicAddress.port}`);
    const played = await fetch(url);
    expect(played.status).toBe(200);
    expect(Buffer.from(await played.arrayBuffer())).toEqual(audio);
  });

  it('is validated like S3_ENDPOINT', () => {
    const s3 = { STORAGE_DRIVER: 's3', S3_BUCKET: 'recordings', S3_REGION: 'us-east-1' };
    expect(loadConfig({ ...s3, S3_PUBLIC_ENDPOINT: 'http://localhost:9000/' }).storage.s3!.publicEndpoint).toBe('http://localhost:9000');
    expect(loadConfig(s3).storage.s3!.publicEndpoint).toBeUndefined();
    expect(() => loadConfig({ ...s3, S3_PUBLIC_ENDPOINT: 'minio:9000' })).toThrow(ConfigError);
    expect(() => loadConfig({ ...s3, S3_PUBLIC_ENDPOINT: 'ftp://minio' })).toThrow('S3_PUBLIC_ENDPOINT');
  });
});

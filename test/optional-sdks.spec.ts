import { execFile } from 'node:child_process';
import * as path from 'node:path';
import { promisify } from 'node:util';

/**
 * The SDKs of optional providers are loaded only when configured: the whole application's module graph, as
 * the server imports it, holds neither the openai SDK (LLM_BASE_URL) nor the AWS SDK (STORAGE_DRIVER=s3). A
 * server without the provider does not need their memory. In a child process: this process's module registry
 * is Jest's.
 */
describe('optional SDKs', () => {
  it('are not loaded by the application unless their provider is configured', async () => {
    const probe = `
      require('./src/app.module');
      const loaded = Object.keys(require.cache);
      console.log(JSON.stringify({
        app: loaded.some((file) => file.includes('conversations.module')),
        openai: loaded.some((file) => file.includes('/node_modules/openai/')),
        aws: loaded.some((file) => file.includes('/node_modules/@aws-sdk/')),
      }));`;
    const { stdout } = await promisify(execFile)(process.execPath, ['-r', './scripts/register.js', '-e', probe], {
      cwd: path.resolve(__dirname, '..'),
    });
    expect(JSON.parse(stdout.trim().split('\n').at(-1)!)).toEqual({ app: true, openai: false, aws: false });
  }, 60_000);
});

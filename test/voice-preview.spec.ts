import { loadConfig } from '../src/config/config';
import { BuiltinTextToSpeech } from '../src/voice/tts/builtin-tts';
import { binaryBody, createTestContext, TestAccount, TestContext } from './helpers';
import { decodeMp3 } from './support/voice-audio';

/** `GET /voices/{voiceId}/preview` as the account: status, content type and body (a Buffer for the MP3, else the parsed JSON). */
async function preview(context: TestContext, account: TestAccount, path: string) {
  const response = await context.as(account).get(path).buffer(true).parse(binaryBody);
  const type = String(response.headers['content-type']);
  const body = type.startsWith('application/json') ? JSON.parse((response.body as Buffer).toString('utf8')) : (response.body as Buffer);
  return { status: response.status, type, body };
}

/**
 * The voice preview (contract section 15) beyond test/voice-calls.spec.ts: who may hear a restricted voice, the
 * default language, and the 503 of a service without text-to-speech.
 */
describe('GET /voices/{voiceId}/preview with the built-in voice', () => {
  let context: TestContext;
  let owner: TestAccount;
  let platform: TestAccount;

  beforeAll(async () => {
    context = await createTestContext();
    owner = await context.createAccount();
    platform = await context.createAccount({ platform: true });
  });
  afterAll(() => context?.close());

  it.each(['ritu-preview', 'shubh-ng'])(
    'speaks the restricted voice %s to the platform account, and refuses it to another account (403) before and after',
    async (voice) => {
      const refused = {
        status: 403,
        type: 'application/json; charset=utf-8',
        body: { statusCode: 403, error: 'Forbidden', message: expect.stringContaining(voice) },
      };
      expect(await preview(context, owner, `/voices/${voice}/preview`)).toEqual(refused);
      const sample = await preview(context, platform, `/voices/${voice}/preview`);
      expect([sample.status, sample.type]).toEqual([200, 'audio/mpeg']);
      expect((await decodeMp3(sample.body as Buffer)).seconds).toBeGreaterThan(1);
      // The sample is kept by the service now: still not for another account.
      expect(await preview(context, owner, `/voices/${voice}/preview`)).toEqual(refused);
    },
  );

  it('speaks hi-IN without a language: the same bytes as language=hi-IN, other bytes than language=ta-IN', async () => {
    const spoken = async (path: string) => {
      const answer = await preview(context, owner, path);
      expect([answer.status, answer.type]).toEqual([200, 'audio/mpeg']);
      return answer.body as Buffer;
    };
    const unsaid = await spoken('/voices/anushka/preview');
    const hindi = await spoken('/voices/anushka/preview?language=hi-IN');
    const tamil = await spoken('/voices/anushka/preview?language=ta-IN');
    expect(unsaid.length).toBeGreaterThan(0);
    expect(unsaid.equals(hindi)).toBe(true);
    expect(unsaid.equals(tamil)).toBe(false);
  });
});

describe('GET /voices/{voiceId}/preview without text-to-speech', () => {
  const noVoice = {
    status: 503,
    type: 'application/json; charset=utf-8',
    body: { statusCode: 503, error: 'Service Unavailable', message: expect.any(String) },
  };

  /** A context built by `setup`, the preview of a stable voice asked of it, the context closed. */
  async function previewWithout(setup: () => Promise<TestContext>) {
    const context = await setup();
    try {
      const account = await context.createAccount();
      return {
        stable: await preview(context, account, '/voices/shubh/preview?language=ta-IN'),
        // The catalog's answers come first: an unknown voice is still a 404, a restricted one a 403.
        unknown: (await preview(context, account, '/voices/nobody/preview')).status,
        restricted: (await preview(context, account, '/voices/ritu-preview/preview')).status,
      };
    } finally {
      await context.close();
    }
  }

  it('answers 503 in the error shape when TTS_PROVIDER is none', async () => {
    const voice = { ...loadConfig(process.env).voice, ttsProvider: 'none' as const };
    expect(await previewWithout(() => createTestContext({ voice }))).toEqual({ stable: noVoice, unknown: 404, restricted: 403 });
  });

  it('answers 503 in the error shape when the built-in synthesizer (an optional package) is not installed', async () => {
    const load = jest.spyOn(BuiltinTextToSpeech, 'load').mockReturnValue(null);
    try {
      const voice = { ...loadConfig(process.env).voice, ttsProvider: 'builtin' as const };
      expect(await previewWithout(() => createTestContext({ voice }))).toEqual({ stable: noVoice, unknown: 404, restricted: 403 });
      expect(load).toHaveBeenCalled();
    } finally {
      load.mockRestore();
    }
  });
});

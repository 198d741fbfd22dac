import { Webhook as StandardWebhook } from 'standardwebhooks';
import { loadConfig } from '../src/config/config';
import { ChatRequest, FakeLlm, startFakeLlm } from './fake-llm';
import { FakeSpeechProviders, standInVoice, startFakeSpeechProviders, synthesised } from './fake-speech-providers';
import { openingHoursTool, startToolServer, ToolServer } from './fake-tool-server';
import { createListeningTestContext, TestAccount, TestContext } from './helpers';
import { widgetVoiceCall } from './support/voice-client';

/**
 * A webhook tool called in a spoken conversation (contract section 18), over the voice socket: the tool gets its
 * signed request, the model its answer, and the reply made with it is spoken. While the tool runs, the agent says
 * the tool's `speakWhileRunning`: heard, but not part of the reply's text or the transcript.
 */

const WHILE_RUNNING = 'One moment, let me check.';
const REPLY = 'We open at nine on Sundays.';

const afterTools = (request: ChatRequest) => request.body.messages.at(-1)?.role === 'tool';

describe('a tool called in a spoken conversation', () => {
  let context: TestContext;
  let baseUrl: string;
  let owner: TestAccount;
  let providers: FakeSpeechProviders;
  let llm: FakeLlm;
  let server: ToolServer;

  beforeAll(async () => {
    providers = await startFakeSpeechProviders();
    llm = await startFakeLlm();
    server = await startToolServer();
    ({ context, baseUrl } = await createListeningTestContext({
      widgetRateLimit: 10_000,
      voice: standInVoice(providers),
      llm: { baseUrl: llm.url, apiKey: 'sk-test-key', timeoutMs: 30_000, maxTokens: 256 },
      webhooks: { ...loadConfig(process.env).webhooks, allowPrivateTargets: true },
    }));
    owner = await context.createAccount();
  });
  afterAll(async () => {
    await context?.close();
    await server?.close();
    await providers?.close();
    await llm?.close();
  });

  it('says speakWhileRunning while the tool runs, then speaks the reply made with its signed answer', async () => {
    const tool = (await context.as(owner).post('/tools').send(openingHoursTool(server, WHILE_RUNNING)).expect(201)).body as {
      id: number;
      secret: string;
    };
    const agentId = (
      await context
        .as(owner)
        .post('/agents')
        .send({ name: 'Asha', language: 'en-IN', toolIds: [tool.id] })
        .expect(201)
    ).body.id;
    const { client, session } = await widgetVoiceCall(context, owner, agentId, baseUrl, 'Hello!');
    await client.next('reply.done'); // the greeting

    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    server.answer = () => ({ kind: 'json', body: { opens: '09:00' }, hold: held });
    llm.behave((request) => {
      if (!request.body.stream) return { kind: 'completion', content: '{}' };
      return afterTools(request)
        ? { kind: 'stream', pieces: ['We open at nine ', 'on Sundays.'] }
        : { kind: 'tool-calls', calls: [{ name: 'opening_hours', arguments: '{"day":"sunday"}' }] };
    });
    const said = synthesised(providers, WHILE_RUNNING);
    const from = client.messages.length;
    client.send({ type: 'text', text: 'When do you open on Sunday?' });

    // Said, and heard, while the tool's answer is held: the tool is running.
    await said;
    const audioFrom = client.audio.length;
    await client.until(() => client.audioSeconds(audioFrom) > 0.2);
    expect(server.requests).toHaveLength(1);
    expect(client.messages.slice(from).filter((message) => message.type === 'reply.done')).toEqual([]);
    release();

    const done = await client.next('reply.done', from);
    expect(done).toMatchObject({ text: REPLY, interrupted: false });
    // The reply shown is the model's: the words said while the tool ran are not part of it.
    const shown = client.messages.slice(from).flatMap((message) => (message.type === 'reply' ? [message.text] : []));
    expect(shown.join('')).toBe(REPLY);

    // The request was signed with the tool's secret, and the model was given the tool's answer.
    const [request] = server.requests;
    const body = new StandardWebhook(tool.secret).verify(request.body, request.headers as Record<string, string>) as Record<
      string,
      unknown
    >;
    expect(body).toMatchObject({ tool: 'opening_hours', arguments: { day: 'sunday' }, conversation: { id: session.conversationId } });
    const asked = llm.requests.find(afterTools)!;
    expect(asked.body.messages.at(-1)?.content).toBe('{"opens":"09:00"}');

    client.send({ type: 'end' });
    await client.next('ended');
    const call = (await context.as(owner).get(`/calls/${session.conversationId}`).expect(200)).body;
    expect(call.transcript.map(({ speaker, text }: { speaker: string; text: string }) => [speaker, text])).toEqual([
      ['agent', 'Hello!'],
      ['user', 'When do you open on Sunday?'],
      ['tool', 'opening_hours {"day":"sunday"} → {"opens":"09:00"}'],
      ['agent', REPLY],
    ]);
  });
});

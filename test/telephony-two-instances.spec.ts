import { DataSource } from 'typeorm';
import { loadConfig } from '../src/config/config';
import { ConversationEnds } from '../src/conversations/conversation-ends.service';
import { PhoneStreams } from '../src/telephony/phone-streams';
import { FakeLlm, startFakeLlm } from './fake-llm';
import { FAKE_SPEECH_KEY, FakeSpeechProviders, startFakeSpeechProviders } from './fake-speech-providers';
import { eventually, TestAccount, TestContext } from './helpers';
import { localTestStorage, TestStorage } from './recordings-helpers';
import { FakeCall, FakeTwilio } from './support/fake-twilio';
import { ConnectedNumber, connectNumber, createAgent, telephonyContext } from './support/telephony';

/**
 * A phone call whose conversation ends on another instance than the one holding its media stream (the idle sweep
 * runs on any): the holder hears of it (`NOTIFY conversation_ended`) and hangs up, once; with no holder, the ending
 * instance asks the carrier itself. Two instances of the app on one PostgreSQL and one recordings store.
 */
const CLOSE_TIMEOUT_MS = 90_000;
jest.setTimeout(120_000);

describe('a phone call ended on another instance', () => {
  let twilio: FakeTwilio;
  let storage: TestStorage;
  let providers: FakeSpeechProviders;
  let llm: FakeLlm;
  let a: TestContext;
  let b: TestContext;
  let aUrl: string;
  let bUrl: string;
  let owner: TestAccount;
  let connected: ConnectedNumber;

  beforeAll(async () => {
    twilio = await FakeTwilio.start();
    storage = await localTestStorage();
    providers = await startFakeSpeechProviders();
    llm = await startFakeLlm();
    llm.behave((request) =>
      request.body.stream
        ? { kind: 'stream', pieces: ['Noted.'] }
        : { kind: 'completion', content: '{"sentiment":"neutral","status":"new","summary":"A call."}' },
    );
    const voice = {
      ...loadConfig({}).voice,
      sttProvider: 'openai' as const,
      openAiStt: { baseUrl: providers.openAiUrl, apiKey: FAKE_SPEECH_KEY, model: 'whisper-1' },
    };
    const settings = { ...storage.config, voice, llm: { baseUrl: llm.url, apiKey: 'sk-test-key', timeoutMs: 30_000, maxTokens: 256 } };
    ({ context: a, baseUrl: aUrl } = await telephonyContext(twilio, settings));
    ({ context: b, baseUrl: bUrl } = await telephonyContext(twilio, settings));
    owner = await a.createAccount();
    const agentId = await createAgent(a, owner, { name: 'Reception', language: 'en-IN' });
    connected = await connectNumber(a, owner, twilio, { agentId, greeting: 'Namaste.' });
  });
  afterAll(async () => {
    await a?.close();
    await b?.close();
    await twilio?.close();
    await providers?.close();
    await llm?.close();
    await storage?.stop();
  }, CLOSE_TIMEOUT_MS);

  const completions = (call: FakeCall) =>
    twilio.requests.filter((request) => request.path.endsWith(`/Calls/${call.sid}.json`) && request.form.get('Status') === 'completed');
  const conversationOf = async (call: FakeCall) =>
    (
      await a.app.get(DataSource).query<{ id: string }[]>(`SELECT conversation_id AS id FROM phone_calls WHERE call_sid = $1`, [call.sid])
    )[0].id;

  it('runs a call whose webhook one instance answered and whose stream the other holds; an end on the first hangs up through the second', async () => {
    // The number's webhooks are a's (it connected the number); behind one balancer the stream may reach b: the TwiML
    // a answered is connected to b.
    const { call } = await twilio.dialIn(connected.carrierNumber, '+919876543210');
    call.twiml = call.twiml.replace(aUrl.replace(/^http/, 'ws'), bUrl.replace(/^http/, 'ws'));
    expect(call.twiml).toContain(bUrl.replace(/^http/, 'ws'));
    const stream = await twilio.connect(call);
    const conversationId = await conversationOf(call);
    stream.press('1'); // at once: a digit pressed while the call opens is kept for it
    await eventually(async () => {
      const rows = await a.app
        .get(DataSource)
        .query(`SELECT 1 FROM conversation_messages WHERE conversation_id = $1 AND speaker = 'agent' AND text = 'Noted.'`, [
          conversationId,
        ]);
      return rows.length > 0 ? true : undefined;
    }, 60_000);
    const notHolding = jest.spyOn(a.app.get(PhoneStreams), 'hangUpCarrierCall');

    expect(await a.app.get(ConversationEnds).endNow(owner.id, conversationId, 'idle-timeout')).toBe(true);
    await twilio.ended(call); // b finished the last sentence, asked the carrier, closed the stream
    expect(completions(call)).toHaveLength(1);
    expect(notHolding).not.toHaveBeenCalled(); // a left the hang-up to the holder
    const recorded = await eventually(async () => {
      const response = await a.as(owner).get(`/calls/${conversationId}`).expect(200);
      return response.body.hasRecording ? response.body : undefined;
    }, 60_000);
    expect(recorded).toMatchObject({ channel: 'phone', endedReason: 'idle-timeout' });
  });

  it('asks the carrier itself when no instance holds the stream (the call is not answered yet)', async () => {
    const placed = await b.as(owner).post(`/phone-numbers/${connected.phone.id}/calls`).send({ to: '+919800000002' }).expect(201);
    const call = twilio.lastCallTo('+919800000002')!;
    await twilio.report(call, 'ringing');
    expect(await b.app.get(ConversationEnds).endNow(owner.id, placed.body.conversationId, 'agent-hung-up')).toBe(true);
    await eventually(async () => (completions(call).length > 0 ? true : undefined));
    expect(completions(call)).toHaveLength(1);
  });
});

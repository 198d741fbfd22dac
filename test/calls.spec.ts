import { CallsService } from '../src/calls/calls.service';
import { createTestContext, TestAccount, TestContext } from './helpers';

describe('calls', () => {
  let context: TestContext;
  let owner: TestAccount;
  let other: TestAccount;

  beforeAll(async () => {
    context = await createTestContext();
    owner = await context.createAccount();
    other = await context.createAccount();
  });
  afterAll(() => context.close());

  const record = async (account: TestAccount, body: object = {}) =>
    (await context.as(account).post('/calls').send(body).expect(201)).body;

  it('records a call with every default', async () => {
    const call = await record(owner);
    expect(call).toEqual({
      id: expect.stringMatching(/^[0-9a-f-]{36}$/),
      name: '',
      phone: '',
      email: '',
      status: '',
      callStatus: '',
      sentiment: '',
      channel: '',
      callType: '',
      website: '',
      agent: '',
      agentId: null,
      callDate: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/),
      durationSeconds: 0,
      replyLanguage: '',
      hasRecording: false,
      feedback: null,
      extractedData: {},
      creditsUsed: 0,
      transcript: [],
    });
    expect((await context.as(owner).get(`/calls/${call.id}`).expect(200)).body).toEqual(call);
    await context.as(other).get(`/calls/${call.id}`).expect(404);
  });

  it('lets the recordings module set and clear the storage key, scoped to the account', async () => {
    const call = await record(owner);
    const service = context.app.get(CallsService);
    await expect(service.setRecordingKey(other.id, call.id, 'stolen')).rejects.toThrow(`Call ${call.id} not found`);
    await service.setRecordingKey(owner.id, call.id, 'recordings/abc.mp3');
    expect((await service.get(owner.id, call.id)).recordingKey).toBe('recordings/abc.mp3');
    expect((await context.as(owner).get(`/calls/${call.id}`).expect(200)).body.hasRecording).toBe(true);
    await service.setRecordingKey(owner.id, call.id, null);
    expect((await context.as(owner).get(`/calls/${call.id}`).expect(200)).body.hasRecording).toBe(false);
    await expect(service.get(other.id, call.id)).rejects.toThrow(`Call ${call.id} not found`);
  });
});

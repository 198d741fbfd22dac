import { once } from 'node:events';
import * as http from 'node:http';
import { AddressInfo } from 'node:net';
import { mulaw } from 'alawmulaw';
import VoiceResponse from 'twilio/lib/twiml/VoiceResponse';
import { validateRequest } from 'twilio/lib/webhooks/webhooks';
import WebSocket, { WebSocketServer } from 'ws';
import { FakeTwilio } from './support/fake-twilio';
import { FRAME_BYTES, MediaStreamCall, parseTwiml, toMulaw } from './support/fake-twilio-media';
import { fixture } from './support/voice-audio';

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- the test reads the carrier's JSON as it comes
type Message = Record<string, any>;

/** The service's side of a media stream, as a test plays it: what the carrier sent, and a way to answer. */
class StreamPeer {
  readonly messages: Message[] = [];
  readonly closed: Promise<void>;
  constructor(readonly socket: WebSocket) {
    socket.on('message', (data) => {
      this.messages.push(JSON.parse((data as Buffer).toString('utf8')) as Message);
      socket.emit('parsed');
    });
    this.closed = new Promise((resolve) => socket.once('close', () => resolve()));
  }
  async next(test: (message: Message) => boolean): Promise<Message> {
    for (;;) {
      const found = this.messages.find(test);
      if (found) return found;
      await once(this.socket, 'parsed');
    }
  }
  send(message: Message): void {
    this.socket.send(JSON.stringify(message));
  }
}

/** A loopback receiver of the carrier's webhooks: answers TwiML to the voice webhook, keeps the status callbacks. */
class WebhookSink {
  readonly callbacks: { params: Record<string, string>; validSignature: boolean }[] = [];
  twiml = '';
  url = '';
  private constructor(
    private readonly server: http.Server,
    private readonly authToken: () => string,
  ) {}
  static async start(authToken: () => string): Promise<WebhookSink> {
    const server = http.createServer();
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const sink = new WebhookSink(server, authToken);
    sink.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    server.on('request', (request: http.IncomingMessage, response: http.ServerResponse) => {
      const chunks: Buffer[] = [];
      request.on('data', (chunk: Buffer) => chunks.push(chunk));
      request.on('end', () => {
        const params = Object.fromEntries(new URLSearchParams(Buffer.concat(chunks).toString('utf8')));
        const signature = String(request.headers['x-twilio-signature'] ?? '');
        const validSignature = validateRequest(sink.authToken(), signature, `${sink.url}${request.url}`, params);
        if (request.url === '/incoming') return void response.writeHead(200, { 'content-type': 'text/xml' }).end(sink.twiml);
        sink.callbacks.push({ params, validSignature });
        response.writeHead(204).end();
      });
    });
    return sink;
  }
  close(): Promise<void> {
    return new Promise((resolve) => this.server.close(() => resolve()));
  }
}

/**
 * The stand-in carrier's media stream (test/support/fake-twilio-media.ts), against a WebSocket server the test plays
 * as the service: Twilio's messages and their fields, the caller's audio at 20 ms frames, the playout of the
 * service's audio with its marks, `clear`, keypad digits, and the ends of a call (the caller's `stop`, a REST
 * `Status=completed`) with their signed `completed` callback.
 */
describe('the stand-in carrier media stream', () => {
  let twilio: FakeTwilio;
  let server: WebSocketServer;
  let streamUrl: string;
  let sink: WebhookSink;
  let authToken = '';
  const peers: StreamPeer[] = [];
  const waitingPeers: ((peer: StreamPeer) => void)[] = [];
  const nextPeer = () =>
    new Promise<StreamPeer>((resolve) => {
      const ready = peers.shift();
      if (ready) resolve(ready);
      else waitingPeers.push(resolve);
    });

  beforeAll(async () => {
    twilio = await FakeTwilio.start();
    server = new WebSocketServer({ host: '127.0.0.1', port: 0 });
    await once(server, 'listening');
    streamUrl = `ws://127.0.0.1:${(server.address() as AddressInfo).port}/telephony/twilio/stream`;
    server.on('connection', (socket) => {
      const peer = new StreamPeer(socket);
      const waiting = waitingPeers.shift();
      if (waiting) waiting(peer);
      else peers.push(peer);
    });
    sink = await WebhookSink.start(() => authToken);
  });
  afterAll(async () => {
    await twilio.close();
    for (const client of server.clients) client.terminate();
    await new Promise<void>((resolve) => server.close(() => resolve()));
    await sink.close();
  });

  const connectTwiml = (token: string) => {
    const response = new VoiceResponse();
    response.connect().stream({ url: streamUrl }).parameter({ name: 'token', value: token });
    return response.toString();
  };

  it('reads the TwiML it is given: a stream with its parameters (unescaped), or sentences and a hang-up', () => {
    expect(parseTwiml(connectTwiml('a&b"<c>'))).toEqual({ kind: 'stream', stream: { url: streamUrl, parameters: { token: 'a&b"<c>' } } });
    const sayHangUp = new VoiceResponse();
    sayHangUp.say('Sorry & goodbye.');
    sayHangUp.hangup();
    expect(parseTwiml(sayHangUp.toString())).toEqual({ kind: 'say-hangup', sentences: ['Sorry & goodbye.'] });
    expect(parseTwiml('<Response><Pause/></Response>').kind).toBe('other');
  });

  it("answers an inbound call's stream as Twilio does, plays the service's audio, echoes marks as they play and at once on a clear, sends digits, and the caller's hang-up", async () => {
    const account = twilio.addAccount();
    authToken = account.authToken;
    const number = twilio.addNumber(account);
    number.voiceUrl = `${sink.url}/incoming`;
    number.statusCallback = `${sink.url}/status`;
    sink.twiml = connectTwiml('vst_secret');
    const { call, answer } = await twilio.dialIn(number, '+919876543210');
    expect(answer.status).toBe(200);
    const speech = fixture('en-question');
    const [stream, peer] = await Promise.all([
      twilio.connect(call).then((answered) => {
        answered.say(speech, 16000);
        return answered;
      }),
      nextPeer(),
    ]);

    // connected, then start with the call's identity, the parameters and the format.
    expect(await peer.next(() => true)).toEqual({ event: 'connected', protocol: 'Call', version: '1.0.0' });
    const start = await peer.next((message) => message.event === 'start');
    expect(start).toEqual({
      event: 'start',
      sequenceNumber: '1',
      streamSid: stream.streamSid,
      start: {
        accountSid: account.sid,
        streamSid: stream.streamSid,
        callSid: call.sid,
        tracks: ['inbound'],
        customParameters: { token: 'vst_secret' },
        mediaFormat: { encoding: 'audio/x-mulaw', sampleRate: 8000, channels: 1 },
      },
    });
    expect(stream.streamSid).toMatch(/^MZ[0-9a-f]{32}$/);

    // The caller's speech goes out in 20 ms frames of μ-law, numbered in order.
    const expected = toMulaw(speech, 16000);
    const frames = Math.ceil(expected.length / FRAME_BYTES);
    await peer.next((message) => message.event === 'media' && message.media.chunk === String(frames));
    const media = peer.messages.filter((message) => message.event === 'media');
    media.slice(0, frames).forEach((message, index) => {
      expect(message.sequenceNumber).toBe(String(index + 2));
      expect(message.media).toMatchObject({ track: 'inbound', chunk: String(index + 1), timestamp: String(index * 20) });
      expect(Buffer.from(message.media.payload, 'base64').length).toBe(FRAME_BYTES);
    });
    const sent = Buffer.concat(media.slice(0, frames).map((message) => Buffer.from(message.media.payload, 'base64')));
    expect(sent.subarray(0, expected.length)).toEqual(Buffer.from(expected));

    // The service's audio plays at 160 bytes per 20 ms: a mark comes back once what was before it has played.
    const tone = new Int16Array(1600).map((_, index) => Math.round(8000 * Math.sin(index / 3))); // 200 ms
    const payload = Buffer.from(mulaw.encode(tone)).toString('base64');
    peer.send({ event: 'media', streamSid: stream.streamSid, media: { payload } });
    peer.send({ event: 'mark', streamSid: stream.streamSid, mark: { name: 'sentence-1' } });
    for (let index = 0; index < 50; index++) peer.send({ event: 'media', streamSid: stream.streamSid, media: { payload } }); // 10 s
    peer.send({ event: 'mark', streamSid: stream.streamSid, mark: { name: 'sentence-2' } });
    expect(await stream.marks(1)).toEqual(['sentence-1']);
    expect(stream.playedMs).toBeGreaterThanOrEqual(200);
    const echoed = await peer.next((message) => message.event === 'mark');
    expect(echoed).toMatchObject({ streamSid: stream.streamSid, mark: { name: 'sentence-1' } });
    expect(Number(echoed.sequenceNumber)).toBeGreaterThan(Number(start.sequenceNumber));

    // A clear empties the buffer: the pending mark comes back at once, long before its audio would have played.
    peer.send({ event: 'clear', streamSid: stream.streamSid });
    expect(await stream.marks(2)).toEqual(['sentence-1', 'sentence-2']);
    expect(stream.playedMs).toBeLessThan(10_200);
    expect(stream.bufferedMs).toBe(0);
    expect(stream.clears).toBe(1);
    expect(stream.receivedPcm()).toHaveLength(51 * 1600);

    // Keypad digits, one dtmf event each.
    stream.press('12#');
    for (const digit of ['1', '2', '#']) {
      expect(await peer.next((message) => message.event === 'dtmf' && message.dtmf.digit === digit)).toMatchObject({
        streamSid: stream.streamSid,
        dtmf: { track: 'inbound_track', digit },
      });
    }

    // The caller hangs up: stop, the socket closes, and the call's completed callback is posted, signed.
    await stream.hangUp();
    expect(await peer.next((message) => message.event === 'stop')).toMatchObject({
      streamSid: stream.streamSid,
      stop: { accountSid: account.sid, callSid: call.sid },
    });
    await peer.closed;
    const completed = await twilio.ended(call);
    expect(completed?.status).toBe(204);
    expect(sink.callbacks.at(-1)).toEqual({
      params: expect.objectContaining({ CallSid: call.sid, CallStatus: 'completed', CallDuration: expect.stringMatching(/^\d+$/) }),
      validSignature: true,
    });
  });

  it('answers a placed call (initiated, ringing, in-progress, then the stream), and the REST Status=completed stops the stream before the completed callback', async () => {
    const account = twilio.addAccount();
    authToken = account.authToken;
    const number = twilio.addNumber(account);
    sink.callbacks.length = 0;
    const auth = `Basic ${Buffer.from(`${account.sid}:${account.authToken}`).toString('base64')}`;
    const form = new URLSearchParams({
      To: '+919876543210',
      From: number.phoneNumber,
      Twiml: connectTwiml('vst_out'),
      StatusCallback: `${sink.url}/status`,
      Timeout: '30',
    });
    for (const event of ['initiated', 'ringing', 'answered', 'completed']) form.append('StatusCallbackEvent', event);
    const placed = await fetch(`${twilio.url}/2010-04-01/Accounts/${account.sid}/Calls.json`, {
      method: 'POST',
      headers: { authorization: auth },
      body: form,
    });
    expect(placed.status).toBe(201);
    const call = twilio.lastCallTo('+919876543210')!;
    const [stream, peer] = await Promise.all([twilio.connect(call), nextPeer()]);
    expect(sink.callbacks.map((callback) => callback.params.CallStatus)).toEqual(['initiated', 'ringing', 'in-progress']);
    const start = await peer.next((message) => message.event === 'start');
    expect(start.start.customParameters).toEqual({ token: 'vst_out' });

    const ended = await fetch(`${twilio.url}/2010-04-01/Accounts/${account.sid}/Calls/${call.sid}.json`, {
      method: 'POST',
      headers: { authorization: auth },
      body: new URLSearchParams({ Status: 'completed' }),
    });
    expect(ended.status).toBe(200);
    expect(await peer.next((message) => message.event === 'stop')).toMatchObject({ stop: { callSid: call.sid } });
    await peer.closed;
    await stream.closed;
    await twilio.ended(call);
    expect(sink.callbacks.map((callback) => [callback.params.CallStatus, callback.validSignature])).toEqual([
      ['initiated', true],
      ['ringing', true],
      ['in-progress', true],
      ['completed', true],
    ]);
    expect(stream).toBeInstanceOf(MediaStreamCall);
  });
});

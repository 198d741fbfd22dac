import { once } from 'node:events';
import { AddressInfo } from 'node:net';
import WebSocket, { WebSocketServer } from 'ws';
import { Downsampler, FRAME_SAMPLES, Framer, pcm16ToFloat32, toInt16 } from '../src/widget-sites/widget/pcm-frames';
import {
  ServerMessage,
  SocketLike,
  VoiceConnection,
  VoiceListener,
  VoiceOutcome,
  voiceSocketUrl,
} from '../src/widget-sites/widget/voice-protocol';

/** The widget's voice client without a browser: the capture worklet's arithmetic, and the socket protocol against a `ws` server. */

const sine = (rate: number, frequency: number, seconds: number, amplitude = 0.5) =>
  Float32Array.from({ length: Math.round(rate * seconds) }, (_, index) => amplitude * Math.sin((2 * Math.PI * frequency * index) / rate));

/** Sign changes per second: twice the frequency of a pure tone. */
const crossingsPerSecond = (samples: Int16Array, rate: number) => {
  let crossings = 0;
  for (let index = 1; index < samples.length; index++) if (samples[index - 1] < 0 !== samples[index] < 0) crossings++;
  return crossings / (samples.length / rate);
};

const rms = (samples: Int16Array) => Math.sqrt(samples.reduce((sum, sample) => sum + sample * sample, 0) / samples.length) / 0x8000;

/** Pushes the input in chunks of `size` (the worklet's render quantum is 128) and joins the output. */
function downsampleInChunks(input: Float32Array, inputRate: number, size = 128): Int16Array {
  const downsampler = new Downsampler(inputRate);
  const pieces: number[] = [];
  for (let offset = 0; offset < input.length; offset += size) pieces.push(...downsampler.push(input.subarray(offset, offset + size)));
  return Int16Array.from(pieces);
}

describe('the capture worklet: resampling to 16 kHz', () => {
  it.each([48_000, 44_100, 22_050, 16_000, 8_000])('keeps a 440 Hz tone at %i Hz: its pitch, its level and its length', (rate) => {
    const output = downsampleInChunks(sine(rate, 440, 1), rate);
    expect(Math.abs(output.length - 16_000)).toBeLessThanOrEqual(2);
    expect(crossingsPerSecond(output, 16_000)).toBeCloseTo(880, -1);
    expect(rms(output)).toBeCloseTo(0.5 / Math.SQRT2, 1);
  });

  it('gives the same samples whatever the chunks the input arrives in', () => {
    const input = sine(44_100, 1_000, 0.5);
    const whole = new Downsampler(44_100).push(input);
    for (const size of [1, 127, 128, 1_000]) expect(downsampleInChunks(input, 44_100, size)).toEqual(whole);
  });

  it('attenuates a tone above the new Nyquist frequency (48 kHz → 16 kHz, 12 kHz)', () => {
    expect(rms(downsampleInChunks(sine(48_000, 12_000, 1), 48_000))).toBeLessThan(0.15);
  });

  it('clamps samples beyond full scale instead of wrapping around', () => {
    expect([toInt16(1.5), toInt16(-1.5), toInt16(1), toInt16(-1), toInt16(0)]).toEqual([32_767, -32_768, 32_767, -32_768, 0]);
  });

  it('refuses a rate that is not positive', () => {
    expect(() => new Downsampler(0)).toThrow(RangeError);
  });
});

describe('the capture worklet: 20 ms frames', () => {
  it('cuts the samples into frames of 320, in order, each with a buffer of its own', () => {
    const framer = new Framer();
    const frames: Int16Array[] = [];
    const total = FRAME_SAMPLES * 3 + 17;
    const samples = Int16Array.from({ length: total }, (_, index) => index);
    for (let offset = 0; offset < total; offset += 128) frames.push(...framer.push(samples.subarray(offset, offset + 128)));
    expect(FRAME_SAMPLES).toBe(320);
    expect(frames.map((frame) => frame.length)).toEqual([320, 320, 320]);
    expect(Array.from(frames[2])).toEqual(Array.from(samples.subarray(640, 960)));
    expect(new Set(frames.map((frame) => frame.buffer)).size).toBe(3);
    expect(frames[0].buffer.byteLength).toBe(640);
  });

  it("reads the agent's audio as 16-bit little-endian PCM, ignoring an odd last byte", () => {
    const bytes = Uint8Array.from([0x00, 0x40, 0x00, 0xc0, 0xff, 0x7f, 0x12]);
    expect(Array.from(pcm16ToFloat32(bytes.buffer))).toEqual([0.5, -0.5, 32_767 / 32_768]);
  });
});

/** A socket of the `ws` package, as the widget's client sees the browser's. */
const openWs = (url: string) => new WebSocket(url) as unknown as SocketLike;

interface Recorded {
  ready: [number, string][];
  messages: ServerMessage[];
  /** Resolves once `count` messages have been handed over. */
  received(count: number): Promise<void>;
  audio: number[];
  closed: Promise<[VoiceOutcome, number]>;
}

function recordingListener(): { listener: VoiceListener; recorded: Recorded; firstReady: Promise<void> } {
  let closed!: (value: [VoiceOutcome, number]) => void;
  let readied!: () => void;
  const waiting: { count: number; resolve: () => void }[] = [];
  const recorded: Recorded = {
    ready: [],
    messages: [],
    received: (count) => new Promise((resolve) => (recorded.messages.length >= count ? resolve() : waiting.push({ count, resolve }))),
    audio: [],
    closed: new Promise((resolve) => (closed = resolve)),
  };
  const firstReady = new Promise<void>((resolve) => (readied = resolve));
  const listener: VoiceListener = {
    ready: (sampleRate, input) => {
      recorded.ready.push([sampleRate, input]);
      readied();
    },
    message: (message) => {
      recorded.messages.push(message);
      for (const waiter of waiting) if (recorded.messages.length >= waiter.count) waiter.resolve();
    },
    audio: (pcm) => recorded.audio.push(pcm.byteLength),
    closed: (outcome, code) => closed([outcome, code]),
  };
  return { listener, recorded, firstReady };
}

describe("the voice socket's client against a server playing the service", () => {
  let server: WebSocketServer;
  let url: string;
  /** Each socket the server accepted, with the frames it received. */
  let sockets: { socket: WebSocket; frames: (string | number)[]; started: Promise<void> }[];

  beforeEach(async () => {
    server = new WebSocketServer({ host: '127.0.0.1', port: 0 });
    await once(server, 'listening');
    url = voiceSocketUrl(`http://127.0.0.1:${(server.address() as AddressInfo).port}`, 'c0ffee00-0000-4000-8000-000000000001');
    sockets = [];
    server.on('connection', (socket) => {
      const frames: (string | number)[] = [];
      let started!: () => void;
      sockets.push({ socket, frames, started: new Promise((resolve) => (started = resolve)) });
      socket.on('message', (data: Buffer, binary: boolean) => {
        frames.push(binary ? data.length : data.toString());
        if (!binary && JSON.parse(data.toString()).type === 'start') started();
      });
    });
  });

  afterEach(async () => {
    for (const client of server.clients) client.terminate();
    await new Promise((resolve) => server.close(resolve));
  });

  const connect = (listener: VoiceListener) => {
    const connection = new VoiceConnection({ url, token: 'vac_secret', sampleRate: 16_000, open: openWs }, listener);
    connection.connect();
    return connection;
  };

  const nextSocket = async (index: number) => {
    while (sockets.length <= index) await once(server, 'connection');
    await sockets[index].started;
    return sockets[index];
  };

  it('derives the socket address from the script’s base address (http → ws, https → wss)', () => {
    expect(voiceSocketUrl('https://api.example.com/voice', 'a/b')).toBe('wss://api.example.com/voice/conversations/a%2Fb/voice');
    expect(voiceSocketUrl('http://127.0.0.1:3000', 'id')).toBe('ws://127.0.0.1:3000/conversations/id/voice');
  });

  it('starts with the token, sends audio only once ready, hands over what the service says, and ends with `end`', async () => {
    const { listener, recorded, firstReady } = recordingListener();
    const connection = connect(listener);
    const service = await nextSocket(0);
    connection.sendAudio(new ArrayBuffer(640)); // before ready: dropped
    expect(connection.sendText('too early')).toBe(false);
    service.socket.send(JSON.stringify({ type: 'ready', sampleRate: 24_000, input: 'text' }));
    await firstReady;
    connection.sendAudio(new ArrayBuffer(640));
    expect(connection.sendText('How long does delivery take?')).toBe(true);
    service.socket.send(JSON.stringify({ type: 'transcript', text: 'How long does delivery take?', final: true }));
    service.socket.send(JSON.stringify({ type: 'reply', text: 'Three ' }));
    service.socket.send(Buffer.alloc(960));
    service.socket.send('not json'); // ignored
    service.socket.send(JSON.stringify({ type: 'clear' }));
    service.socket.send(JSON.stringify({ type: 'reply.done', text: 'Three', interrupted: true }));
    service.socket.send(JSON.stringify({ type: 'error', message: 'A reply to the previous message is still being produced.' }));
    service.socket.on('message', (data: Buffer, binary: boolean) => {
      if (binary || JSON.parse(data.toString()).type !== 'end') return;
      service.socket.send(JSON.stringify({ type: 'ended' }));
      service.socket.close(1000, 'Conversation ended');
    });
    await recorded.received(5); // the error message, the last one, has been handed over
    expect(connection.end()).toBe(true);

    await expect(recorded.closed).resolves.toEqual(['ended', 1000]);
    expect(service.frames).toEqual([
      JSON.stringify({ type: 'start', token: 'vac_secret', sampleRate: 16_000 }),
      640,
      JSON.stringify({ type: 'text', text: 'How long does delivery take?' }),
      JSON.stringify({ type: 'end' }),
    ]);
    expect(recorded.ready).toEqual([[24_000, 'text']]);
    expect(recorded.audio).toEqual([960]);
    expect(recorded.messages).toEqual([
      { type: 'transcript', text: 'How long does delivery take?', final: true },
      { type: 'reply', text: 'Three ' },
      { type: 'clear' },
      { type: 'reply.done', text: 'Three', interrupted: true },
      { type: 'error', message: 'A reply to the previous message is still being produced.' },
    ]);
  });

  it.each([
    [4410, 'ended'],
    [4404, 'gone'],
    [4409, 'busy'],
    [1008, 'failed'],
  ] as const)('takes close %i as %s, without opening another socket', async (code, outcome) => {
    const { listener, recorded } = recordingListener();
    connect(listener);
    (await nextSocket(0)).socket.close(code, 'closed by the service');
    await expect(recorded.closed).resolves.toEqual([outcome, code]);
    expect(sockets).toHaveLength(1);
  });

  it('opens a lost socket again once, with the same token; lost again, the call has failed', async () => {
    const { listener, recorded, firstReady } = recordingListener();
    connect(listener);
    const first = await nextSocket(0);
    first.socket.send(JSON.stringify({ type: 'ready', sampleRate: 16_000, input: 'speech' }));
    await firstReady;
    first.socket.terminate(); // 1006 at the client
    const second = await nextSocket(1);
    expect(second.frames[0]).toBe(first.frames[0]);
    second.socket.close(1001, 'Going away');
    await expect(recorded.closed).resolves.toEqual(['failed', 1001]);
    expect(sockets).toHaveLength(2);
  });

  it('closing it from the widget does not end the conversation and reports nothing', async () => {
    let reported: VoiceOutcome | undefined;
    const { listener } = recordingListener();
    let client!: WebSocket;
    const open = (address: string) => (client = new WebSocket(address)) as unknown as SocketLike;
    const connection = new VoiceConnection(
      { url, token: 'vac_secret', sampleRate: 16_000, open },
      { ...listener, closed: (outcome) => (reported = outcome) },
    );
    connection.connect();
    const service = await nextSocket(0);
    const serverSaw = once(service.socket, 'close');
    connection.stop();
    // Listeners run in the order they were added: the client's own close handler has run before this one.
    await once(client, 'close');
    expect(((await serverSaw) as [number])[0]).toBe(1000);
    expect(service.frames.map((frame) => JSON.parse(frame as string).type)).toEqual(['start']);
    expect(reported).toBeUndefined();
  });
});

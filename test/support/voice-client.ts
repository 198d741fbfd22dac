import { setTimeout as sleep } from 'node:timers/promises';
import WebSocket from 'ws';
import type { TestAccount, TestContext } from '../helpers';

/** A text frame the service sent, parsed. */
export type ServerMessage = { type: string; [field: string]: unknown };

export interface ReceivedAudio {
  /** When the frame arrived (performance.now()). */
  at: number;
  pcm: Int16Array;
}

/**
 * A voice socket's client side for the tests: everything the service sends is kept in order (text frames parsed,
 * audio frames with their arrival time), and the test waits for what it expects instead of for a time.
 */
export class VoiceClient {
  readonly messages: ServerMessage[] = [];
  readonly audio: ReceivedAudio[] = [];
  readonly closed: Promise<{ code: number; reason: string }>;
  private waiters: (() => void)[] = [];

  private constructor(readonly socket: WebSocket) {
    socket.binaryType = 'nodebuffer';
    socket.on('message', (data: Buffer, isBinary: boolean) => {
      if (isBinary) {
        const copy = Buffer.from(data);
        this.audio.push({ at: performance.now(), pcm: new Int16Array(copy.buffer, copy.byteOffset, copy.length / 2) });
      } else this.messages.push(JSON.parse(data.toString('utf8')) as ServerMessage);
      this.wake();
    });
    this.closed = new Promise((resolve) =>
      socket.on('close', (code, reason) => {
        resolve({ code, reason: reason.toString() });
        this.wake();
      }),
    );
  }

  /** Opens the socket of a conversation (the `Origin` header as a browser would send it, when given). */
  static async connect(baseUrl: string, conversationId: string, origin?: string): Promise<VoiceClient> {
    const socket = new WebSocket(`${baseUrl.replace(/^http/, 'ws')}/conversations/${conversationId}/voice`, {
      headers: origin ? { Origin: origin } : {},
    });
    await new Promise<void>((resolve, reject) => {
      socket.once('open', () => resolve());
      socket.once('error', reject);
      socket.once('unexpected-response', (_request, response) => reject(new Error(`HTTP ${response.statusCode}`)));
    });
    return new VoiceClient(socket);
  }

  /** Sends `start` and waits for `ready`. */
  async start(token: string, sampleRate = 16_000): Promise<ServerMessage> {
    this.send({ type: 'start', token, sampleRate });
    return this.next('ready');
  }

  send(message: object): void {
    this.socket.send(JSON.stringify(message));
  }

  /** The first message of `type` after the `after`-th message (by default any), waiting for it. */
  async next(type: string, after = 0, timeoutMs = 20_000): Promise<ServerMessage> {
    const found = await this.until(() => this.messages.slice(after).find((message) => message.type === type), timeoutMs);
    return found;
  }

  /** Waits until `check` returns something (re-checked on every frame received and at close). */
  async until<T>(check: () => T | undefined | false, timeoutMs = 20_000): Promise<T> {
    const deadline = performance.now() + timeoutMs;
    for (;;) {
      const value = check();
      if (value) return value;
      const left = deadline - performance.now();
      if (left <= 0) throw new Error(`Timed out; messages so far: ${JSON.stringify(this.messages).slice(0, 2_000)}`);
      await Promise.race([new Promise<void>((resolve) => this.waiters.push(resolve)), sleep(Math.min(left, 1_000))]);
    }
  }

  /**
   * Streams PCM (16-bit mono at `sampleRate`) as a microphone would: 20 ms frames at real time, each sent at its
   * absolute deadline so that the pace does not drift. Stops early when `stop()` says so.
   */
  async stream(pcm: Int16Array, sampleRate = 16_000, stop: () => boolean = () => false): Promise<void> {
    const frame = (sampleRate * 20) / 1000;
    const begin = performance.now();
    for (let index = 0, offset = 0; offset < pcm.length && !stop(); index++, offset += frame) {
      const wait = begin + index * 20 - performance.now();
      if (wait > 0) await sleep(wait);
      if (this.socket.readyState !== WebSocket.OPEN) return;
      const chunk = new Int16Array(frame); // the last frame padded with silence to a whole 20 ms
      chunk.set(pcm.subarray(offset, offset + frame));
      this.socket.send(Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength));
    }
  }

  /** Seconds of agent audio received (at 16 kHz). */
  audioSeconds(from = 0): number {
    return this.audio.slice(from).reduce((total, frame) => total + frame.pcm.length, 0) / 16_000;
  }

  close(): void {
    this.socket.close(1000);
  }

  private wake(): void {
    for (const resolve of this.waiters.splice(0)) resolve();
  }
}

/** `seconds` of digital silence at 16 kHz (a microphone left open). */
export const silence = (seconds: number) => new Int16Array(Math.round(seconds * 16_000));

/** The page every widget voice call of the tests is opened from: its site allows it. */
export const WIDGET_PAGE = 'https://shop.example.com';

/**
 * A widget conversation (`session`: its id and token) on a new site of the agent's that says `greeting` first, its
 * voice socket connected from the site's page and started (`ready`: the service's answer to `start`).
 */
export async function widgetVoiceCall(
  context: TestContext,
  owner: TestAccount,
  agentId: number,
  baseUrl: string,
  greeting: string,
): Promise<{ client: VoiceClient; session: { conversationId: string; token: string }; ready: ServerMessage }> {
  const site = (
    await context
      .as(owner)
      .post('/widget/sites')
      .send({ name: 'Shop', agentId, allowedDomain: new URL(WIDGET_PAGE).hostname, widgetGreeting: greeting })
      .expect(201)
  ).body;
  const session = (await context.http.post('/widget/sessions').set('Origin', WIDGET_PAGE).send({ siteKey: site.siteKey }).expect(201)).body;
  const client = await VoiceClient.connect(baseUrl, session.conversationId, WIDGET_PAGE);
  const ready = await client.start(session.token);
  return { client, session, ready };
}

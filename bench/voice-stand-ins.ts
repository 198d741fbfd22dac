/**
 * The voice benchmark's three providers (bench/voice.ts), in a process of their own so that they answer at once
 * however busy the benchmark's callers keep its own event loop: an OpenAI-compatible chat (test/fake-llm.ts),
 * transcription and speech server on loopback. Sends `{ llmUrl, speechUrl }` to its parent once listening, and
 * runs until the parent disconnects. The chat replies the pieces given as its argument (JSON, from startStandIns).
 */
import * as http from 'node:http';
import { AddressInfo } from 'node:net';
import { startFakeLlm } from '../test/fake-llm';

/** 20 s of a 220 Hz tone at 24 kHz, made once: the speech stand-in answers a slice of it at once. */
const TONE = Buffer.alloc(20 * 24_000 * 2);
for (let index = 0; index < TONE.length / 2; index++)
  TONE.writeInt16LE(Math.round(6_000 * Math.sin((2 * Math.PI * 220 * index) / 24_000)), index * 2);

/** Transcription and speech stand-ins (OpenAI's wire format): a fixed transcript, and a second of tone per 15 characters. */
async function startSpeechServer(): Promise<{ url: string; close(): Promise<void> }> {
  const server = http.createServer((request, response) => {
    const parts: Buffer[] = [];
    request.on('data', (part: Buffer) => parts.push(part));
    request.on('end', () => {
      if (request.url === '/v1/audio/transcriptions') {
        return void response.writeHead(200, { 'Content-Type': 'application/json' }).end(JSON.stringify({ text: 'When do you open?' }));
      }
      const { input } = JSON.parse(Buffer.concat(parts).toString('utf8')) as { input: string };
      const bytes = Math.min(TONE.length, Math.round((input.length / 15) * 24_000) * 2);
      response.writeHead(200, { 'Content-Type': 'audio/pcm' }).end(TONE.subarray(0, bytes));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

async function main(): Promise<void> {
  const llm = await startFakeLlm();
  llm.behave({ kind: 'stream', pieces: JSON.parse(process.argv[2]) as string[] });
  const speech = await startSpeechServer();
  process.send!({ llmUrl: llm.url, speechUrl: speech.url });
  process.once('disconnect', () => void Promise.all([llm.close(), speech.close()]).then(() => process.exit(0)));
}

void main();

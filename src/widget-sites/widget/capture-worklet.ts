/**
 * The microphone's AudioWorklet processor: the first channel of its input, at the AudioContext's rate, becomes
 * 20 ms frames of 16 kHz 16-bit PCM posted to the main thread (each frame's buffer transferred). Bundled on its
 * own into a string that the widget loads from a Blob URL (scripts/build-widget.ts).
 */
import { CAPTURE_PROCESSOR, Downsampler, Framer } from './pcm-frames';

// The AudioWorkletGlobalScope's globals, which the DOM library does not declare.
declare const sampleRate: number;
declare class AudioWorkletProcessor {
  readonly port: MessagePort;
}
declare function registerProcessor(name: string, processor: new () => AudioWorkletProcessor): void;

class CaptureProcessor extends AudioWorkletProcessor {
  private readonly downsampler = new Downsampler(sampleRate);
  private readonly framer = new Framer();

  process(inputs: Float32Array[][]): boolean {
    const channel = inputs[0]?.[0];
    if (channel) {
      for (const frame of this.framer.push(this.downsampler.push(channel))) this.port.postMessage(frame.buffer, [frame.buffer]);
    }
    return true; // keep running while the microphone is connected
  }
}

registerProcessor(CAPTURE_PROCESSOR, CaptureProcessor);

/**
 * The visitor's microphone as 20 ms frames of 16 kHz 16-bit PCM: getUserMedia with the browser's echo
 * cancellation, noise suppression and gain control, into the capture worklet (which resamples and frames off the
 * main thread). The worklet is loaded from a Blob URL made from its bundled source, so the widget needs no file
 * besides embed.js; a page whose Content-Security-Policy refuses blob: scripts gets the text box instead.
 */
import { CAPTURE_PROCESSOR } from './pcm-frames';

/** The capture worklet's bundle (capture-worklet.ts), put in as text by scripts/build-widget.ts. */
declare const CAPTURE_WORKLET_SOURCE: string;

export class Microphone {
  private constructor(
    private readonly stream: MediaStream,
    private readonly source: MediaStreamAudioSourceNode,
    private readonly node: AudioWorkletNode,
  ) {}

  /** Whether this browser can capture at all (a secure page, getUserMedia, AudioWorklet). */
  static supported(): boolean {
    return typeof navigator.mediaDevices?.getUserMedia === 'function' && typeof window.AudioWorkletNode === 'function';
  }

  /** Asks for the microphone (rejects when there is none or the visitor refuses) and starts framing its audio. */
  static async open(context: AudioContext, onFrame: (frame: ArrayBuffer) => void): Promise<Microphone> {
    const stream = await navigator.mediaDevices.getUserMedia({
      audio: { echoCancellation: true, noiseSuppression: true, autoGainControl: true, channelCount: 1 },
    });
    try {
      await loadWorklet(context);
      const source = context.createMediaStreamSource(stream);
      const node = new AudioWorkletNode(context, CAPTURE_PROCESSOR, { numberOfInputs: 1, numberOfOutputs: 0 });
      node.port.onmessage = (event: MessageEvent<ArrayBuffer>) => onFrame(event.data);
      source.connect(node);
      return new Microphone(stream, source, node);
    } catch (error) {
      stream.getTracks().forEach((track) => track.stop());
      throw error;
    }
  }

  /**
   * Muted, the track is disabled: the browser then delivers silence, so frames of zeros keep going to the service
   * (its turn detection and the recording's timeline go on; an utterance cut by Mute ends as silence would end it).
   */
  setMuted(muted: boolean): void {
    this.stream.getAudioTracks().forEach((track) => (track.enabled = !muted));
  }

  close(): void {
    this.node.port.onmessage = null;
    this.source.disconnect();
    this.node.disconnect();
    this.stream.getTracks().forEach((track) => track.stop());
  }
}

const loadedContexts = new WeakSet<AudioContext>();

async function loadWorklet(context: AudioContext): Promise<void> {
  if (loadedContexts.has(context)) return;
  const url = URL.createObjectURL(new Blob([CAPTURE_WORKLET_SOURCE], { type: 'application/javascript' }));
  try {
    await context.audioWorklet.addModule(url);
    loadedContexts.add(context);
  } finally {
    URL.revokeObjectURL(url);
  }
}

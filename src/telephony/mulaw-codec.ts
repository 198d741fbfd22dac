import { mulaw } from 'alawmulaw';
import { Resampler } from '../voice/audio/resample';
import { VOICE_SAMPLE_RATE } from '../voice/voice-format';

/** The telephone's audio on a Twilio media stream: G.711 μ-law, 8 kHz, mono. */
export const CARRIER_SAMPLE_RATE = 8_000;

/**
 * The codec at the media stream's edge. In: μ-law bytes → 16-bit PCM at 8 kHz (the call resamples it to its own
 * rate a slice at a time, as it does a browser's). Out: the pipeline's 16 kHz frames → 8 kHz (one resampler per
 * call, so that its filter runs across frames) → μ-law.
 */
export class MulawCodec {
  private readonly down = new Resampler(VOICE_SAMPLE_RATE, CARRIER_SAMPLE_RATE);

  /** The caller's audio, as PCM at CARRIER_SAMPLE_RATE. */
  decode(bytes: Uint8Array): Int16Array {
    return mulaw.decode(bytes);
  }

  /** One frame of the agent's voice (16 kHz PCM) as μ-law at 8 kHz. */
  encode(frame: Int16Array): Uint8Array {
    return mulaw.encode(this.down.process(frame));
  }
}

/**
 * The audio format inside the voice pipeline: 16-bit little-endian mono PCM at 16 kHz. The client's audio is
 * resampled to it on arrival, every synthesizer's output before it is paced out, and the recording, the voice
 * activity detection and speech-to-text all take it as it is.
 */
export const VOICE_SAMPLE_RATE = 16_000;

/** One tick of the pipeline's clock, and the size of the frames it sends: 20 ms. */
export const FRAME_MS = 20;
export const FRAME_SAMPLES = (VOICE_SAMPLE_RATE * FRAME_MS) / 1000;

import { FRAME_SAMPLES, VOICE_SAMPLE_RATE } from '../voice-format';
import { rmsDbfs } from '../audio/pcm';

/** The WebAssembly exports of libfvad (WebRTC's voice activity detector) that this uses. */
interface FvadModule {
  _fvad_new(): number;
  _fvad_free(handle: number): void;
  _fvad_set_mode(handle: number, mode: number): number;
  _fvad_set_sample_rate(handle: number, rate: number): number;
  _fvad_process(handle: number, samples: number, count: number): number;
  _malloc(bytes: number): number;
  HEAP16: Int16Array;
}

/** The most aggressive mode: the others took faint noise after speech for speech, and the turn never ended. */
const MODE = 3;
/** Below this level a frame is silence whatever the detector says (as Pipecat's min_volume). */
const FLOOR_DBFS = -50;

let loading: Promise<{ module: FvadModule; scratch: number }> | undefined;

/** One module for the process (its heap is reserved once); a handle per call is a few hundred bytes. */
function load(): Promise<{ module: FvadModule; scratch: number }> {
  loading ??= (async () => {
    const { default: create } = await import('@echogarden/fvad-wasm');
    const module = (await create()) as FvadModule;
    return { module, scratch: module._malloc(FRAME_SAMPLES * 2) };
  })().catch((error: unknown) => {
    loading = undefined; // the next call tries again rather than failing for the life of the process
    throw error;
  });
  return loading;
}

/**
 * Whether a 20 ms frame (16 kHz) is speech: WebRTC's VAD in WebAssembly, plus an energy floor. Its frames are
 * copied into one scratch buffer of the module's heap; the module is synchronous and the event loop runs one
 * frame at a time, so every handle shares it.
 */
export class VoiceActivity {
  private constructor(
    private readonly module: FvadModule,
    private readonly scratch: number,
    private handle: number,
  ) {}

  static async create(): Promise<VoiceActivity> {
    const { module, scratch } = await load();
    const handle = module._fvad_new();
    if (!handle) throw new Error('The voice activity detector could not be created');
    if (module._fvad_set_mode(handle, MODE) !== 0 || module._fvad_set_sample_rate(handle, VOICE_SAMPLE_RATE) !== 0) {
      module._fvad_free(handle);
      throw new Error('The voice activity detector could not be set up');
    }
    return new VoiceActivity(module, scratch, handle);
  }

  isSpeech(frame: Int16Array): boolean {
    if (!this.handle) throw new Error('This voice activity detector was freed');
    if (frame.length !== FRAME_SAMPLES) throw new RangeError(`A VAD frame is ${FRAME_SAMPLES} samples`);
    if (rmsDbfs(frame) < FLOOR_DBFS) return false;
    // HEAP16 is read each time: it is a new view whenever the module's memory grows.
    this.module.HEAP16.set(frame, this.scratch >> 1);
    return this.module._fvad_process(this.handle, this.scratch, FRAME_SAMPLES) === 1;
  }

  free(): void {
    if (this.handle) this.module._fvad_free(this.handle);
    this.handle = 0;
  }
}

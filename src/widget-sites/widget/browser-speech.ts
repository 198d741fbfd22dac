/**
 * The browser's own speech recognition, for a service without speech-to-text (`ready.input` is `text`): it
 * listens continuously in the agent's language and hands over each final utterance; the audio still streams to
 * the service for the recording.
 */
interface RecognitionResult {
  readonly isFinal: boolean;
  readonly 0: { transcript: string };
}
interface RecognitionEvent {
  readonly resultIndex: number;
  readonly results: ArrayLike<RecognitionResult>;
}
interface Recognition {
  lang: string;
  interimResults: boolean;
  continuous: boolean;
  onresult: ((event: RecognitionEvent) => void) | null;
  onerror: ((event: { error?: string }) => void) | null;
  onend: (() => void) | null;
  start(): void;
  abort(): void;
}
type RecognitionConstructor = new () => Recognition;

function recognitionClass(): RecognitionConstructor | null {
  const scope = window as unknown as { SpeechRecognition?: RecognitionConstructor; webkitSpeechRecognition?: RecognitionConstructor };
  return scope.SpeechRecognition || scope.webkitSpeechRecognition || null;
}

export const speechRecognitionAvailable = (): boolean => recognitionClass() !== null;

/** Errors after which listening again cannot help: the visitor or the browser refused it. */
const REFUSED = new Set(['not-allowed', 'service-not-allowed', 'audio-capture', 'language-not-supported']);
/** A recognition that ends sooner than this is started again only after this long: no busy loop of restarts. */
const RESTART_AFTER_MS = 1000;

export class BrowserListener {
  private current: Recognition | null = null;
  private active = false;

  constructor(
    private readonly language: string,
    private readonly onUtterance: (text: string) => void,
    /** The browser will not recognise speech (refused, or failed to start): the text box takes over. */
    private readonly onRefused: () => void,
  ) {}

  start(): void {
    this.active = true;
    this.listen();
  }

  stop(): void {
    this.active = false;
    const current = this.current;
    this.current = null;
    if (current) current.abort();
  }

  private listen(): void {
    const Constructor = recognitionClass();
    if (!Constructor || !this.active || this.current) return;
    const recognition = new Constructor();
    let refused = false;
    recognition.lang = this.language;
    recognition.interimResults = true;
    recognition.continuous = true;
    recognition.onresult = (event) => {
      for (let index = event.resultIndex; index < event.results.length; index++) {
        const result = event.results[index];
        const text = result.isFinal ? result[0].transcript.trim() : '';
        if (text) this.onUtterance(text);
      }
    };
    recognition.onerror = (event) => (refused = REFUSED.has(event.error || ''));
    // Browsers stop listening after a silence: listen again for as long as the call goes on.
    recognition.onend = () => {
      if (this.current !== recognition) return;
      this.current = null;
      if (refused) this.refuse();
      else setTimeout(() => this.listen(), Math.max(0, startedAt + RESTART_AFTER_MS - Date.now()));
    };
    this.current = recognition;
    const startedAt = Date.now();
    try {
      recognition.start();
    } catch {
      this.current = null;
      this.refuse();
    }
  }

  private refuse(): void {
    this.active = false;
    this.onRefused();
  }
}

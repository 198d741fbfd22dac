import { Page } from 'playwright-core';

/**
 * What the browser tests run inside the page (page.evaluate, page.addInitScript). The project compiles without
 * the DOM library (it would let server code use browser globals), so the few browser globals used here are
 * declared in this module only, as loosely as these small scripts need.
 */
interface ElementLike {
  className: string;
  tagName: string;
  shadowRoot: { activeElement: ElementLike | null; querySelector(selector: string): ElementLike | null } | null;
  parentElement: ElementLike | null;
  classList: { contains(name: string): boolean };
}
interface MutationLike {
  target: ElementLike;
  addedNodes: ArrayLike<{ nodeType: number; textContent: string | null }>;
}
declare const document: {
  activeElement: ElementLike | null;
  querySelector(selector: string): ElementLike | null;
  addEventListener(type: string, listener: (event: { detail: unknown; preventDefault(): void }) => void): void;
};
declare const window: Record<string, unknown>;
declare const sessionStorage: { getItem(key: string): string | null };
declare function getComputedStyle(element: ElementLike): Record<string, string>;
declare function fetch(url: string): Promise<unknown>;
declare class MutationObserver {
  constructor(callback: (records: MutationLike[]) => void);
  observe(target: ElementLike, options: object): void;
}

/** The conversation the widget keeps for a reload (sessionStorage), or null. */
export async function savedConversation(page: Page, siteKey: string): Promise<{ conversationId: string; token: string } | null> {
  const saved = await page.evaluate((key) => sessionStorage.getItem(key), `voice-agent-widget:${siteKey}`);
  return saved === null ? null : JSON.parse(saved);
}

/** The element of the widget that has the keyboard focus: its class, or its tag name (null when focus is outside). */
export const focusedInWidget = (page: Page): Promise<string | null> =>
  page.evaluate(() => {
    const host = document.activeElement;
    if (!host || host.tagName !== 'VOICE-AGENT-WIDGET') return null;
    const focused = host.shadowRoot!.activeElement;
    return focused ? focused.className || focused.tagName.toLowerCase() : null;
  });

/** The computed outline of the focused element of the widget (the visible focus). */
export const focusOutline = (page: Page): Promise<string> =>
  page.evaluate(() => {
    const style = getComputedStyle(document.activeElement!.shadowRoot!.activeElement!);
    return `${style.outlineStyle} ${style.outlineWidth}`;
  });

/**
 * From now on, keeps in `window.replyTexts` every text an agent's reply showed, in order: each streamed piece
 * replaces the reply's text, so a reply that streamed shows several growing prefixes of itself.
 */
export const recordReplyTexts = (page: Page): Promise<void> =>
  page.evaluate(() => {
    const texts: string[] = [];
    window.replyTexts = texts;
    const transcript = document.querySelector('voice-agent-widget')!.shadowRoot!.querySelector('.messages')!;
    new MutationObserver((records) => {
      for (const record of records) {
        const isReply = record.target.classList.contains('text') && record.target.parentElement!.classList.contains('agent');
        for (const node of Array.from(record.addedNodes)) if (isReply && node.nodeType === 3) texts.push(node.textContent!);
      }
    }).observe(transcript, { childList: true, subtree: true });
  });

export const replyTexts = (page: Page): Promise<string[]> => page.evaluate(() => window.replyTexts as string[]);

/** Computed styles of elements of the widget's conversation, to check that the host page's CSS does not reach them. */
export const conversationStyles = (page: Page) =>
  page.evaluate(() => {
    const root = document.querySelector('voice-agent-widget')!.shadowRoot!;
    const style = (selector: string) => getComputedStyle(root.querySelector(selector)!);
    const [list, reply, question, input, end] = [
      style('.messages'),
      style('.message.agent'),
      style('.message.user'),
      style('textarea'),
      style('.end'),
    ];
    return {
      list: [list.listStyleType, list.marginTop, list.backgroundColor],
      reply: [reply.marginTop, reply.backgroundColor, reply.textTransform, reply.fontFamily.includes('Georgia')],
      question: [question.backgroundColor, question.color, question.letterSpacing],
      input: [input.borderTopWidth, input.fontSize],
      end: [end.backgroundColor, end.textTransform],
    };
  });

/** A site's own runtime: its listener takes the start event (preventDefault()) and keeps its detail in `window.externalStart`. */
export const takeOverStart = (page: Page): Promise<void> =>
  page.evaluate(() =>
    document.addEventListener('voice-agent-widget:start', (event) => {
      event.preventDefault();
      window.externalStart = event.detail;
    }),
  );

export const externalStart = (page: Page): Promise<unknown> => page.evaluate(() => window.externalStart);

/** Has the page fetch this URL (and wait for the answer): requests the page issued before it are seen first. */
export const fetchFromPage = (page: Page, url: string): Promise<void> =>
  page.evaluate(async (address) => {
    await fetch(address);
  }, url);

export interface SpeechLog {
  /** The `lang` of each recognition started. */
  listened: string[];
  /** How many recognitions were aborted (the visitor stopped listening). */
  aborted: number;
  /** Every utterance given to speechSynthesis.speak(). */
  spoken: { text: string; lang: string }[];
}

/**
 * Init script: a speech recognition that "hears" each of `sentences` in turn (an interim result, then the final
 * one), then hears nothing more (it keeps listening until stopped), and a speech synthesis that records each
 * utterance and its lang and "finishes" it at once. The log is `window.speech`.
 */
export function installSpeechStub(sentences: string[]): void {
  const log: SpeechLog = { listened: [], aborted: 0, spoken: [] };
  window.speech = log;
  type Handler = ((event: object) => void) | null;
  const results = (transcript: string, isFinal: boolean) => {
    const result = Object.assign([{ transcript, confidence: 0.9 }], { isFinal });
    return { resultIndex: 0, results: [result] };
  };
  class StubRecognition {
    lang = '';
    interimResults = false;
    continuous = false;
    onresult: Handler = null;
    onerror: Handler = null;
    onend: Handler = null;
    private stopped = false;
    start() {
      log.listened.push(this.lang);
      const sentence = sentences.shift();
      if (sentence === undefined) return; // silence: listening until stopped
      setTimeout(() => {
        if (this.stopped) return;
        this.onresult?.(results(sentence.split(' ')[0], false));
        this.onresult?.(results(sentence, true));
        this.onend?.({});
      });
    }
    stop() {
      this.abort();
    }
    abort() {
      if (this.stopped) return;
      this.stopped = true;
      log.aborted++;
      setTimeout(() => this.onend?.({}));
    }
  }
  class StubUtterance {
    lang = '';
    onend: Handler = null;
    onerror: Handler = null;
    constructor(readonly text: string) {}
  }
  const synthesis = {
    speak(utterance: StubUtterance) {
      log.spoken.push({ text: utterance.text, lang: utterance.lang });
      setTimeout(() => utterance.onend?.({}));
    },
    cancel() {},
  };
  window.SpeechRecognition = StubRecognition;
  window.webkitSpeechRecognition = StubRecognition;
  window.SpeechSynthesisUtterance = StubUtterance;
  Object.defineProperty(window, 'speechSynthesis', { value: synthesis, configurable: true });
}

export const speechLog = (page: Page): Promise<SpeechLog> => page.evaluate(() => window.speech as SpeechLog);

/** Init script: a browser without any speech API. */
export function removeSpeech(): void {
  for (const name of ['SpeechRecognition', 'webkitSpeechRecognition', 'speechSynthesis', 'SpeechSynthesisUtterance']) delete window[name];
}

export interface PlayedAudio {
  /** Buffers the page scheduled (AudioBufferSourceNode.start): the agent's audio frames. */
  frames: number;
  /** Their total duration, in seconds. */
  seconds: number;
}

/** Init script: counts the audio buffers the page schedules, in `window.played`. */
export function countPlayedAudio(): void {
  const played: PlayedAudio = { frames: 0, seconds: 0 };
  window.played = played;
  const prototype = (
    window.AudioBufferSourceNode as { prototype: { start(...args: unknown[]): void; buffer: { duration: number } | null } }
  ).prototype;
  const start = Object.getOwnPropertyDescriptor(prototype, 'start')!.value as (...args: unknown[]) => void;
  prototype.start = function (this: typeof prototype, ...args: unknown[]) {
    played.frames++;
    played.seconds += this.buffer ? this.buffer.duration : 0;
    start.apply(this, args);
  };
}

export const playedAudio = (page: Page): Promise<PlayedAudio> => page.evaluate(() => window.played as PlayedAudio);

/**
 * The widget's behaviour once rendered: the launcher and panel, Start (the cancelable `voice-agent-widget:start`
 * event, then the built-in conversation unless a listener called preventDefault()), the chat over HTTP, and in
 * voice mode the spoken call over the voice socket, with the text box whenever speech is not possible.
 */
import { element } from './dom';
import { buildPanel, WidgetConfig } from './panel-view';
import { Restored, SavedSession } from './saved-session';
import { describeError, endConversation, INTERRUPTED, Message, RequestError, sendMessage, Session, startSession } from './service';
import { NoMicrophone, VoiceCall } from './voice-call';
import { VoiceOutcome } from './voice-protocol';

export interface WidgetContext {
  base: string;
  siteKey: string;
  saved: SavedSession;
}

/** How long End waits for the socket's `ended` before ending the conversation over HTTP instead. */
const END_TIMEOUT_MS = 5000;

const NO_MICROPHONE = 'The microphone is not available: type your message instead.';
const TYPE_INSTEAD = 'Speech is not recognised in this browser: speak, and type what you want the assistant to read.';

export function renderWidget(widget: WidgetContext, config: WidgetConfig, restored: Restored | null): void {
  const { base, siteKey, saved } = widget;
  const view = buildPanel(config, !restored);
  const { panel, form, chat, transcript, notice, error, composer, input, send, tools, listening, mute, end, ended, restart } = view;
  const { voiceMode, agentName } = view;
  const language = config.language || document.documentElement.lang || 'en-US';

  let session: Session | null = null; // while a conversation is going on
  let starting = false;
  let replying = false;
  let call: VoiceCall | null = null;
  let audioContext: AudioContext | null = null;
  let endingCall = false;
  let question: HTMLElement | null = null; // the visitor's utterance being heard
  let reply: HTMLElement | null = null; // the agent's reply being spoken
  let greeting: HTMLElement | null = null; // shown at Start, and spoken first by the service: not shown twice

  /** Where the keyboard goes when the panel opens. */
  function focusTarget(): HTMLElement {
    if (chat.hidden) return view.nameInput || view.phoneInput || view.start;
    if (!ended.hidden) return restart;
    return call && !mute.hidden ? mute : input;
  }

  function setOpen(open: boolean, moveFocus = true): void {
    panel.hidden = !open;
    view.launcher.setAttribute('aria-expanded', open ? 'true' : 'false');
    if (view.bubble && open) view.bubble.hidden = true;
    if (!moveFocus) return;
    if (open) focusTarget().focus();
    else view.launcher.focus();
  }

  const scrollToEnd = () => (transcript.scrollTop = transcript.scrollHeight);

  /** Adds a message to the transcript; returns its text's element, to fill as the reply streams. */
  function addMessage(speaker: Message['speaker'], text: string): HTMLElement {
    const item = element('li', 'message ' + speaker);
    item.appendChild(element('span', 'sr-only', speaker === 'user' ? 'You: ' : agentName + ': '));
    const body = element('span', 'text', text);
    item.appendChild(body);
    transcript.appendChild(item);
    scrollToEnd();
    return body;
  }

  /** What screen readers say: the agent's completed replies, not every streamed piece. */
  function announce(text: string): void {
    view.announcer.textContent = '';
    view.announcer.appendChild(element('p', '', agentName + ': ' + text));
  }

  function showConversation(messages: Message[]): void {
    form.hidden = true;
    chat.hidden = false;
    ended.hidden = true;
    composer.hidden = false;
    tools.hidden = false;
    listening.hidden = true;
    mute.hidden = true;
    error.textContent = '';
    notice.textContent = '';
    transcript.textContent = '';
    messages.forEach((message) => addMessage(message.speaker, message.text));
  }

  function showEnded(text: string): void {
    stopCall();
    saved.forget();
    session = null;
    composer.hidden = true;
    tools.hidden = true;
    view.endedText.textContent = text;
    ended.hidden = false;
    restart.focus();
  }

  function setReplying(value: boolean): void {
    replying = value;
    send.setAttribute('aria-disabled', value ? 'true' : 'false');
  }

  /** The visitor's typed message over HTTP: sent, and the reply streams into the transcript. */
  async function say(text: string): Promise<void> {
    const current = session!;
    setReplying(true);
    error.textContent = '';
    const asked = addMessage('user', text).parentElement!;
    const answer = addMessage('agent', '\u2026');
    answer.parentElement!.classList.add('pending');
    let received = '';
    let whole: string | null = null;
    try {
      whole = await sendMessage(base, current, text, (piece) => {
        received += piece;
        answer.textContent = received;
        answer.parentElement!.classList.remove('pending');
        scrollToEnd();
      });
    } catch (failure) {
      if (session === current) showFailure(failure, text, asked, received ? null : answer.parentElement!);
    }
    setReplying(false);
    if (whole === null || session !== current) return; // failed, or ended meanwhile
    answer.textContent = whole; // "done" is authoritative (an apology replaces a provider's broken pieces)
    answer.parentElement!.classList.remove('pending');
    announce(whole);
  }

  function showFailure(failure: unknown, text: string, asked: HTMLElement, emptyReply: HTMLElement | null): void {
    const status = failure instanceof RequestError ? failure.status : 0;
    if (emptyReply) emptyReply.remove();
    if (status === 410 || status === 404) return showEnded(describeError(failure));
    if (status !== INTERRUPTED) {
      // not taken: the message goes back to the text box, to send again
      asked.remove();
      if (!input.value) input.value = text;
    }
    error.textContent = describeError(failure);
  }

  function sendTyped(): void {
    const text = input.value.trim();
    if (!text || replying || !session) return;
    input.value = '';
    if (call && call.sendText(text)) return; // the service shows it back as the visitor's transcript
    void say(text);
  }

  // ---- The spoken call ----

  /** Voice mode after Start: the microphone to the voice socket; without a microphone, the text box. */
  async function beginCall(): Promise<void> {
    if (!session || !audioContext) return useTextBox(NO_MICROPHONE);
    const current = new VoiceCall(audioContext, base, session, language, callView);
    call = current;
    try {
      await current.start();
    } catch (failure) {
      if (call !== current) return;
      call = null;
      if (failure instanceof NoMicrophone) return useTextBox(NO_MICROPHONE);
      throw failure;
    }
  }

  function useTextBox(message: string): void {
    listening.hidden = true;
    mute.hidden = true;
    notice.textContent = message;
    input.focus();
  }

  function stopCall(): void {
    const current = call;
    call = null;
    question = reply = greeting = null;
    if (current) current.stop();
  }

  const callView = {
    listening(input: 'speech' | 'browser' | 'typed') {
      listening.hidden = false;
      mute.hidden = false;
      notice.textContent = input === 'typed' ? TYPE_INSTEAD : '';
      if (!panel.hidden && (panel.contains(document.activeElement) || view.host.shadowRoot!.activeElement === null)) mute.focus();
    },
    transcript(text: string, final: boolean) {
      question = question || addMessage('user', '');
      question.textContent = text;
      question.parentElement!.classList.toggle('pending', !final);
      if (final) question = null;
      scrollToEnd();
    },
    replyPiece(text: string) {
      if (greeting) return; // shown whole already
      reply = reply || addMessage('agent', '');
      reply.textContent += text;
      scrollToEnd();
    },
    replyDone(text: string, interrupted: boolean) {
      const target = greeting || reply || addMessage('agent', '');
      const wasGreeting = target === greeting;
      greeting = reply = null;
      target.parentElement!.classList.toggle('interrupted', interrupted);
      if (wasGreeting) return; // kept whole, as the conversation keeps it, even when the visitor spoke over it
      target.textContent = text;
      announce(text);
    },
    error(message: string) {
      error.textContent = message;
    },
    closed(outcome: VoiceOutcome) {
      call = null;
      question = reply = greeting = null;
      if (outcome === 'ended') showEnded(endingCall ? 'The call has ended. Thank you!' : 'This conversation has ended.');
      else if (outcome === 'gone') showEnded('This conversation is no longer available.');
      else if (outcome === 'busy') useTextBox('This conversation is open in another window: type your message here instead.');
      else useTextBox('The call was cut off: type your message instead.');
    },
  };

  function setMuted(muted: boolean): void {
    if (!call) return;
    call.setMuted(muted);
    mute.textContent = muted ? 'Unmute' : 'Mute';
    mute.setAttribute('aria-pressed', muted ? 'true' : 'false');
    mute.classList.toggle('on', muted);
    listening.textContent = muted ? 'Muted' : 'Listening\u2026';
    listening.classList.toggle('muted', muted);
  }

  /** End: through the socket during a call (the service answers `ended`), otherwise over HTTP. */
  async function endNow(): Promise<void> {
    if (call && call.end()) {
      endingCall = true;
      const current = call;
      window.setTimeout(() => {
        if (call === current) void endOverHttp();
      }, END_TIMEOUT_MS);
      return;
    }
    await endOverHttp();
  }

  async function endOverHttp(): Promise<void> {
    stopCall();
    try {
      if (session) await endConversation(base, session);
    } catch (failure) {
      if (!(failure instanceof RequestError && failure.status === 404)) {
        error.textContent = describeError(failure);
        return;
      }
    }
    showEnded(voiceMode ? 'The call has ended. Thank you!' : 'The chat has ended. Thank you!');
  }

  // ---- Events ----

  form.addEventListener('submit', (event) => {
    event.preventDefault();
    if (starting) return;
    const visitor = { name: view.nameInput ? view.nameInput.value.trim() : '', phone: view.phoneInput ? view.phoneInput.value.trim() : '' };
    const detail = { siteKey, mode: config.mode, name: visitor.name, phone: visitor.phone };
    const builtIn = view.host.dispatchEvent(
      new CustomEvent('voice-agent-widget:start', { detail, bubbles: true, composed: true, cancelable: true }),
    );
    view.status.textContent = voiceMode ? 'Starting the call\u2026' : 'Starting the chat\u2026';
    if (!builtIn) return; // the page called preventDefault(): its own runtime takes over
    // Made during the click, which browsers require before a page may play sound.
    if (voiceMode && !audioContext && window.AudioContext) audioContext = new AudioContext();
    void startConversation(visitor);
  });

  async function startConversation(visitor: { name: string; phone: string }): Promise<void> {
    starting = true;
    view.start.setAttribute('aria-disabled', 'true');
    try {
      const started = await startSession(base, siteKey, visitor);
      session = started.session;
      saved.save(session);
      endingCall = false;
      view.status.textContent = '';
      showConversation(started.greeting ? [{ speaker: 'agent', text: started.greeting }] : []);
      if (started.greeting) announce(started.greeting);
      if (voiceMode) {
        greeting = started.greeting ? transcript.querySelector<HTMLElement>('.message.agent .text') : null;
        await beginCall();
      } else input.focus();
    } catch (failure) {
      const status = failure instanceof RequestError ? failure.status : 0;
      view.status.textContent = status === 409 ? 'This assistant is not available at the moment.' : describeError(failure);
    } finally {
      starting = false;
      view.start.setAttribute('aria-disabled', 'false');
    }
  }

  composer.addEventListener('submit', (event) => {
    event.preventDefault();
    sendTyped();
    input.focus();
  });
  input.addEventListener('keydown', (event) => {
    if (event.key !== 'Enter' || event.shiftKey || event.isComposing) return;
    event.preventDefault();
    sendTyped();
  });
  mute.addEventListener('click', () => setMuted(!(call && call.isMuted)));
  end.addEventListener('click', () => void endNow());
  restart.addEventListener('click', () => {
    chat.hidden = true;
    form.hidden = false;
    (view.nameInput || view.phoneInput || view.start).focus();
  });
  view.launcher.addEventListener('click', () => setOpen(panel.hidden !== false));
  view.close.addEventListener('click', () => setOpen(false));
  panel.addEventListener('keydown', (event) => {
    if (event.key === 'Escape') setOpen(false);
  });
  document.body.appendChild(view.host);

  if (restored) {
    // The page was reloaded mid-conversation: show it again, without taking the keyboard. A call does not resume
    // by itself (a page may not open the microphone or play sound before the visitor acts): the text box goes on.
    session = restored.session;
    showConversation(restored.messages);
    setOpen(true, false);
  }
}

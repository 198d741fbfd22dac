import { createHash } from 'node:crypto';
import { WIDGET_SCRIPT_VERSION } from './embed-snippet';

/**
 * The source of `GET /widget/embed.js`: dependency-free ES2017 that customers' pages load through the
 * snippet. It reads its site key from its own <script data-site-key>, fetches /widget/config/{siteKey}
 * from the address it was loaded from, and renders, inside the Shadow DOM of a
 * <voice-agent-widget> element, the launcher (avatar + label) at the configured corner, the greeting
 * bubble, and a panel that asks for the visitor's name and phone when the site says so. Nothing is
 * rendered when the config is refused (domain not allowed, unknown key). The host page's styles cannot
 * reach inside (`all: initial` on the host, styles in the shadow root) and the widget's cannot leak out.
 *
 * "Start" dispatches a cancelable `voice-agent-widget:start` DOM event ({ siteKey, mode, name, phone }) that
 * bubbles out of the widget. Unless a listener calls preventDefault() (a site with its own runtime), the widget
 * then runs the conversation itself (contract section 10): POST /widget/sessions, the transcript, the reply
 * streamed from POST /conversations/{id}/messages (Server-Sent Events read with fetch: EventSource cannot POST),
 * End; the conversation's id and token in sessionStorage so that a reload shows it again; in voice mode the
 * browser's speech recognition and synthesis in the agent's language, where it has them.
 *
 * Kept as a string (no `${`, no backticks inside) so that it ships with the compiled server unchanged.
 */
const SOURCE = String.raw`(function () {
  'use strict';
  const VERSION = '__VERSION__';
  let script = document.currentScript;
  if (!script || !script.getAttribute('data-site-key')) {
    script = null;
    const candidates = document.querySelectorAll('script[data-site-key]');
    for (let i = 0; i < candidates.length; i++) {
      if (/\/widget\/embed\.js/.test(candidates[i].src) && !candidates[i].hasAttribute('data-voice-agent-started')) { script = candidates[i]; break; }
    }
  }
  if (!script) return;
  script.setAttribute('data-voice-agent-started', '');
  const siteKey = script.getAttribute('data-site-key') || '';
  const started = window.__voiceAgentWidgets || (window.__voiceAgentWidgets = {});
  if (!siteKey || started[siteKey]) return;
  started[siteKey] = VERSION;
  const base = script.src.slice(0, script.src.indexOf('/widget/embed.js'));
  const STORAGE_KEY = 'voice-agent-widget:' + siteKey;
  const MAX_MESSAGE_LENGTH = 2000;
  const MAX_NAME_LENGTH = 200;
  const MAX_PHONE_LENGTH = 50;
  /** Not an HTTP status: the service could not be reached, or the reply's stream broke off. */
  const UNREACHABLE = 0;
  const INTERRUPTED = -1;

  const AVATARS = {
    'default': '<path d="M12 3C7 3 3 6.6 3 11c0 2.4 1.2 4.6 3.2 6.1L5.5 21l4.1-2.3c.8.2 1.6.3 2.4.3 5 0 9-3.6 9-8s-4-8-9-8z" fill="currentColor"/>',
    female: '<circle cx="12" cy="9" r="4.2" fill="currentColor"/><path d="M7.2 8.6C7.2 4.9 9.3 3 12 3s4.8 1.9 4.8 5.6c0 2.5.7 3.8 1.6 4.9-1.6.6-3.1.7-4.2.4M7.2 8.6c0 2.5-.7 3.8-1.6 4.9 1.6.6 3.1.7 4.2.4" fill="none" stroke="currentColor" stroke-width="1.6"/><path d="M4.5 21c.8-3.6 3.9-5.6 7.5-5.6s6.7 2 7.5 5.6z" fill="currentColor"/>',
    male: '<circle cx="12" cy="8.5" r="4.3" fill="currentColor"/><path d="M4.5 21c.8-3.8 3.9-6 7.5-6s6.7 2.2 7.5 6z" fill="currentColor"/>',
    robot: '<rect x="5" y="8" width="14" height="11" rx="3" fill="currentColor"/><circle cx="9.5" cy="13" r="1.6" fill="#fff"/><circle cx="14.5" cy="13" r="1.6" fill="#fff"/><path d="M12 8V4.5" stroke="currentColor" stroke-width="1.6"/><circle cx="12" cy="4" r="1.4" fill="currentColor"/>'
  };

  const STYLE = [
    ':host { all: initial; }',
    '* { box-sizing: border-box; }',
    '[hidden] { display: none !important; }',
    '.root { display: flex; flex-direction: column; align-items: flex-end; gap: 12px; font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, Helvetica, Arial, sans-serif; color: #1d2130; -webkit-font-smoothing: antialiased; }',
    '.root.left { align-items: flex-start; }',
    '.sr-only { position: absolute; width: 1px; height: 1px; margin: -1px; padding: 0; overflow: hidden; clip: rect(0 0 0 0); white-space: nowrap; border: 0; }',
    '.launcher { display: inline-flex; align-items: center; gap: 10px; margin: 0; padding: 7px 20px 7px 7px; border: 0; border-radius: 999px; background: #4338ca; color: #fff; font-family: inherit; font-size: 15px; line-height: 1; font-weight: 600; cursor: pointer; box-shadow: 0 8px 24px rgba(30, 27, 75, .28); }',
    '.launcher:hover { background: #3730a3; }',
    '.launcher:focus-visible, button:focus-visible, input:focus-visible, textarea:focus-visible { outline: 3px solid #a5b4fc; outline-offset: 2px; }',
    '.avatar { flex: none; display: grid; place-items: center; width: 38px; height: 38px; border-radius: 50%; background: #fff; color: #4338ca; }',
    '.avatar svg { width: 24px; height: 24px; }',
    '.bubble { position: relative; max-width: 260px; margin: 0; padding: 11px 34px 11px 14px; border-radius: 14px; background: #fff; box-shadow: 0 6px 22px rgba(15, 23, 42, .18); }',
    '.dismiss { position: absolute; top: 6px; right: 6px; width: 22px; height: 22px; padding: 0; border: 0; border-radius: 50%; background: transparent; color: #6b7080; font-family: inherit; font-size: 16px; line-height: 1; cursor: pointer; }',
    '.panel { width: 340px; max-width: calc(100vw - 40px); border-radius: 16px; background: #fff; box-shadow: 0 12px 40px rgba(15, 23, 42, .25); overflow: hidden; }',
    '.head { display: flex; align-items: center; gap: 12px; padding: 14px 16px; background: #4338ca; color: #fff; }',
    '.head .avatar { width: 40px; height: 40px; }',
    '.title { margin: 0; font-size: 16px; font-weight: 700; }',
    '.subtitle { margin: 2px 0 0; font-size: 13px; opacity: .85; }',
    '.close { margin-left: auto; width: 30px; height: 30px; padding: 0; border: 0; border-radius: 50%; background: rgba(255, 255, 255, .15); color: #fff; font-family: inherit; font-size: 20px; line-height: 1; cursor: pointer; }',
    'form { display: grid; gap: 12px; margin: 0; padding: 16px; }',
    'label { display: grid; gap: 5px; font-size: 13px; font-weight: 600; color: #3b4052; }',
    'input, textarea { width: 100%; margin: 0; padding: 10px 11px; border: 1px solid #c8ccd8; border-radius: 9px; background: #fff; color: #1d2130; font-family: inherit; font-size: 15px; line-height: 1.2; }',
    '.start, .send, .restart { margin: 0; padding: 11px 14px; border: 0; border-radius: 9px; background: #4338ca; color: #fff; font-family: inherit; font-size: 15px; line-height: 1; font-weight: 600; cursor: pointer; }',
    '.start { margin-top: 4px; }',
    '[aria-disabled="true"] { opacity: .55; cursor: default; }',
    '.greeting { margin: 0; color: #3b4052; }',
    '.status { margin: 0; font-size: 13px; color: #4b5163; }',
    '.status:empty, .notice:empty, .error:empty { display: none; }',
    '.messages { display: flex; flex-direction: column; gap: 8px; height: 320px; max-height: calc(100vh - 270px); min-height: 120px; margin: 0; padding: 14px 16px; overflow-y: auto; list-style: none; }',
    '.message { max-width: 85%; padding: 8px 12px; border-radius: 14px; white-space: pre-wrap; overflow-wrap: anywhere; }',
    '.message.agent { align-self: flex-start; background: #eef0fb; border-bottom-left-radius: 4px; }',
    '.message.user { align-self: flex-end; background: #4338ca; color: #fff; border-bottom-right-radius: 4px; }',
    '.message.pending .text { color: #6b7080; }',
    '.notice, .error { margin: 0 16px 10px; font-size: 13px; }',
    '.notice { color: #4b5163; }',
    '.error { padding: 8px 10px; border-radius: 8px; background: #fef2f2; color: #991b1b; }',
    '.composer { display: flex; align-items: flex-end; gap: 8px; padding: 12px 16px; border-top: 1px solid #e4e6ee; }',
    '.composer textarea { flex: 1; height: 42px; max-height: 120px; resize: none; }',
    '.send { height: 42px; }',
    '.tools { display: flex; align-items: center; gap: 8px; padding: 0 16px 14px; }',
    '.tools button { margin: 0; padding: 8px 12px; border-radius: 9px; background: #fff; font-family: inherit; font-size: 13px; line-height: 1; font-weight: 600; cursor: pointer; }',
    '.mic { border: 1px solid #4338ca; color: #4338ca; }',
    '.mic.on { border-color: #b91c1c; background: #fef2f2; color: #991b1b; }',
    '.end { margin-left: auto !important; border: 1px solid #d9b8b8; color: #991b1b; }',
    '.listening { display: inline-flex; align-items: center; gap: 6px; font-size: 13px; font-weight: 600; color: #991b1b; }',
    '.listening::before { content: ""; width: 10px; height: 10px; border-radius: 50%; background: #dc2626; animation: pulse 1.2s ease-in-out infinite; }',
    '@keyframes pulse { 50% { opacity: .25; } }',
    '@media (prefers-reduced-motion: reduce) { .listening::before { animation: none; } }',
    '.ended { display: grid; gap: 12px; padding: 12px 16px 16px; border-top: 1px solid #e4e6ee; }',
    '.ended p { margin: 0; color: #3b4052; }'
  ].join('\n');

  // ---- Building blocks ----

  function element(tag, className, text) {
    const node = document.createElement(tag);
    if (className) node.className = className;
    if (text) node.textContent = text;
    return node;
  }

  function button(className, text, label) {
    const node = element('button', className, text);
    node.type = 'button';
    if (label) node.setAttribute('aria-label', label);
    return node;
  }

  function avatar(kind) {
    const node = element('span', 'avatar');
    node.setAttribute('aria-hidden', 'true');
    node.innerHTML = '<svg viewBox="0 0 24 24" xmlns="http://www.w3.org/2000/svg">' + (AVATARS[kind] || AVATARS['default']) + '</svg>';
    return node;
  }

  /** At most max characters as the service counts them, in code points (maxLength would count an emoji as 2). */
  function limitCharacters(input, max) {
    input.addEventListener('input', function () {
      const characters = Array.from(input.value);
      if (characters.length > max) input.value = characters.slice(0, max).join('');
    });
  }

  function field(form, label, name, type, autocomplete, maxCharacters) {
    const wrapper = element('label', '', label);
    const input = element('input');
    input.name = name;
    input.type = type;
    input.required = true;
    limitCharacters(input, maxCharacters);
    input.setAttribute('autocomplete', autocomplete);
    if (type === 'tel') { input.pattern = '[0-9+\\(\\)\\-. ]{6,20}'; input.title = 'A phone number, digits with + ( ) - . allowed'; }
    wrapper.appendChild(input);
    form.appendChild(wrapper);
    return input;
  }

  // ---- The service: conversations through its public routes ----

  function requestError(status, message, retryAfter) {
    const error = new Error(message || 'HTTP ' + status);
    error.status = status;
    error.retryAfter = retryAfter || 0;
    return error;
  }

  /** fetch() with the conversation's token; a failure becomes an error with the status and the service's message. */
  async function request(method, path, options) {
    const headers = {};
    if (options.token) headers.Authorization = 'Bearer ' + options.token;
    if (options.body) headers['Content-Type'] = 'application/json';
    if (options.accept) headers.Accept = options.accept;
    let response;
    try {
      response = await fetch(base + path, { method: method, headers: headers, body: options.body ? JSON.stringify(options.body) : undefined, credentials: 'omit' });
    } catch (error) {
      throw requestError(UNREACHABLE);
    }
    if (!response.ok) {
      const body = await response.json().catch(function () { return {}; });
      throw requestError(response.status, typeof body.message === 'string' ? body.message : '', Number(response.headers.get('Retry-After')));
    }
    return response;
  }

  async function startSession(visitor) {
    const body = { siteKey: siteKey };
    if (visitor.name) body.name = visitor.name;
    if (visitor.phone) body.phone = visitor.phone;
    const started = await (await request('POST', '/widget/sessions', { body: body })).json();
    return { session: { conversationId: started.conversationId, token: started.token }, greeting: started.greeting };
  }

  const conversationPath = function (session, rest) { return '/conversations/' + encodeURIComponent(session.conversationId) + (rest || ''); };

  async function loadConversation(session) {
    return (await request('GET', conversationPath(session), { token: session.token })).json();
  }

  function endConversation(session) {
    return request('POST', conversationPath(session, '/end'), { token: session.token });
  }

  /** Sends the visitor's message; onDelta gets each piece of the reply as it streams. Resolves with the whole reply. */
  async function sendMessage(session, text, onDelta) {
    const response = await request('POST', conversationPath(session, '/messages'), { token: session.token, body: { text: text }, accept: 'text/event-stream' });
    let reply = null;
    await readEventStream(response, function (name, data) {
      if (name === 'delta') onDelta(data.text);
      else if (name === 'done') reply = data.text;
    });
    if (reply === null) throw requestError(INTERRUPTED);
    return reply;
  }

  /** Reads a text/event-stream body as it arrives (EventSource cannot POST), handing each event to onEvent. */
  async function readEventStream(response, onEvent) {
    let buffer = '';
    const dispatch = function (block) {
      let name = 'message';
      const data = [];
      block.split(/\r?\n/).forEach(function (line) {
        const colon = line.indexOf(':');
        const value = colon < 0 ? '' : line.slice(colon + 1).replace(/^ /, '');
        const key = colon < 0 ? line : line.slice(0, colon);
        if (key === 'event') name = value;
        else if (key === 'data') data.push(value);
      });
      if (!data.length) return;
      let parsed;
      try { parsed = JSON.parse(data.join('\n')); } catch (error) { return; } // not the service's: ignored
      onEvent(name, parsed);
    };
    const consume = function () {
      const blocks = buffer.split(/\r?\n\r?\n/);
      buffer = blocks.pop(); // an unfinished event waits for the rest
      blocks.forEach(dispatch);
    };
    if (!response.body || !response.body.getReader) { // no streamed bodies in this browser: the reply at once
      buffer = await response.text();
      consume();
      return;
    }
    const reader = response.body.getReader();
    const decoder = new TextDecoder();
    for (;;) {
      let chunk;
      try { chunk = await reader.read(); } catch (error) { throw requestError(INTERRUPTED); }
      if (chunk.done) return;
      buffer += decoder.decode(chunk.value, { stream: true });
      consume();
    }
  }

  /** What went wrong, for the visitor. */
  function describeError(error) {
    switch (error.status) {
      case UNREACHABLE: return 'Could not reach the assistant. Check your connection and try again.';
      case INTERRUPTED: return 'The connection was lost while the reply was coming in. Please try again.';
      case 404: return 'This conversation is no longer available.';
      case 400: return 'That message could not be sent: it is empty or longer than 2,000 characters.';
      case 409: return error.message || 'The conversation cannot take this message.';
      case 410: return 'This conversation has ended.';
      case 429: return 'Too many messages in a short time. Please wait ' + (error.retryAfter > 0 ? error.retryAfter + ' seconds' : 'a moment') + ' and try again.';
      default: return 'Something went wrong (error ' + error.status + '). Please try again in a moment.';
    }
  }

  // ---- The conversation kept for a reload of the page (this tab only) ----

  function savedSession() {
    try {
      const saved = JSON.parse(window.sessionStorage.getItem(STORAGE_KEY) || 'null');
      return saved && typeof saved.conversationId === 'string' && typeof saved.token === 'string' ? saved : null;
    } catch (error) {
      return null; // storage disabled or unreadable: nothing to restore
    }
  }

  function saveSession(session) {
    try { window.sessionStorage.setItem(STORAGE_KEY, JSON.stringify(session)); } catch (error) { /* storage disabled: no restore after a reload */ }
  }

  function forgetSession() {
    try { window.sessionStorage.removeItem(STORAGE_KEY); } catch (error) { /* nothing stored */ }
  }

  /** The saved conversation if it is still going on; forgotten when it has ended, or is gone. */
  async function restorableConversation() {
    const session = savedSession();
    if (!session) return null;
    try {
      const conversation = await loadConversation(session);
      if (conversation.status === 'active') return { session: session, messages: conversation.messages };
      forgetSession();
    } catch (error) {
      // 404: gone. UNREACHABLE as well: to a page on another origin the browser hides a 404 (its preflight has no
      // CORS answer), so it cannot be told from a network failure. Other answers (429, 5xx) pass: keep it for later.
      if (error.status === 404 || error.status === UNREACHABLE) forgetSession();
    }
    return null;
  }

  // ---- Speech, where the browser has it ----

  const Recognition = window.SpeechRecognition || window.webkitSpeechRecognition || null;
  const synthesis = window.speechSynthesis && window.SpeechSynthesisUtterance ? window.speechSynthesis : null;
  let utterance = null; // kept referenced until it ends: some browsers drop the end event of a collected utterance

  /** Speaks the text in the language, then calls then (at once when the browser cannot speak). */
  function speak(text, language, then) {
    if (!synthesis || !text) { then(); return; }
    synthesis.cancel();
    const current = new window.SpeechSynthesisUtterance(text);
    current.lang = language;
    current.onend = current.onerror = function () {
      if (utterance !== current) return; // cancelled for another one
      utterance = null;
      then();
    };
    utterance = current;
    synthesis.speak(current);
  }

  function stopSpeaking() {
    utterance = null;
    if (synthesis) synthesis.cancel();
  }

  // ---- The widget ----

  function render(config, restored) {
    const left = config.position === 'bottom-left';
    const voiceMode = config.mode === 'voice';
    const agentName = config.agentName || config.label;
    const language = config.language || document.documentElement.lang || 'en-US';
    const host = document.createElement('voice-agent-widget');
    host.style.cssText = 'all: initial !important; display: block !important; position: fixed !important; z-index: 2147483000 !important; bottom: 20px !important; ' + (left ? 'left' : 'right') + ': 20px !important;';
    const shadow = host.attachShadow({ mode: 'open' });
    const style = element('style');
    style.textContent = STYLE;
    const root = element('div', left ? 'root left' : 'root');
    shadow.appendChild(style);
    shadow.appendChild(root);

    const panel = element('section', 'panel');
    panel.id = 'voice-agent-panel';
    panel.setAttribute('role', 'dialog');
    panel.setAttribute('aria-label', agentName);
    panel.hidden = true;
    const head = element('div', 'head');
    head.appendChild(avatar(config.avatar));
    const titles = element('div');
    titles.appendChild(element('p', 'title', agentName));
    titles.appendChild(element('p', 'subtitle', voiceMode ? 'Voice assistant' : 'Chat assistant'));
    head.appendChild(titles);
    const close = button('close', '\u00d7', 'Close');
    head.appendChild(close);
    panel.appendChild(head);

    // Before the conversation: the greeting, the fields the site asks for, Start.
    const form = element('form');
    if (config.greeting) form.appendChild(element('p', 'greeting', config.greeting));
    const nameInput = config.askName ? field(form, 'Your name', 'name', 'text', 'name', MAX_NAME_LENGTH) : null;
    const phoneInput = config.askPhone ? field(form, 'Phone number', 'phone', 'tel', 'tel', MAX_PHONE_LENGTH) : null;
    const start = element('button', 'start', voiceMode ? 'Start call' : 'Start chat');
    start.type = 'submit';
    form.appendChild(start);
    const status = element('p', 'status');
    status.setAttribute('role', 'status');
    form.appendChild(status);
    panel.appendChild(form);

    // The conversation: the transcript, what went wrong, the text box, the voice controls and End.
    const chat = element('div', 'chat');
    chat.hidden = true;
    const transcript = element('ol', 'messages');
    transcript.setAttribute('aria-label', 'Conversation');
    transcript.tabIndex = 0; // scrollable with the keyboard
    const notice = element('p', 'notice');
    const error = element('p', 'error');
    error.setAttribute('role', 'alert');
    const composer = element('form', 'composer');
    const input = element('textarea');
    input.name = 'message';
    input.rows = 1;
    limitCharacters(input, MAX_MESSAGE_LENGTH);
    input.placeholder = 'Type your message';
    input.setAttribute('aria-label', 'Your message (Enter sends, Shift+Enter starts a new line)');
    const send = element('button', 'send', 'Send');
    send.type = 'submit';
    composer.appendChild(input);
    composer.appendChild(send);
    const tools = element('div', 'tools');
    const listening = element('span', 'listening', 'Listening\u2026');
    listening.setAttribute('role', 'status');
    listening.hidden = true;
    const mic = button('mic', 'Speak');
    mic.hidden = true;
    const end = button('end', voiceMode ? 'End call' : 'End chat');
    tools.appendChild(listening);
    tools.appendChild(mic);
    tools.appendChild(end);
    const ended = element('div', 'ended');
    ended.hidden = true;
    const endedText = element('p');
    const restart = button('restart', voiceMode ? 'New call' : 'New chat');
    ended.appendChild(endedText);
    ended.appendChild(restart);
    const announcer = element('div', 'sr-only announcer');
    announcer.setAttribute('aria-live', 'polite');
    [transcript, notice, error, composer, tools, ended, announcer].forEach(function (node) { chat.appendChild(node); });
    panel.appendChild(chat);

    let bubble = null;
    if (config.greeting && !restored) {
      bubble = element('p', 'bubble', config.greeting);
      const dismiss = button('dismiss', '\u00d7', 'Dismiss greeting');
      dismiss.addEventListener('click', function () { bubble.hidden = true; });
      bubble.appendChild(dismiss);
    }

    const launcher = button('launcher');
    launcher.setAttribute('aria-expanded', 'false');
    launcher.setAttribute('aria-controls', panel.id);
    launcher.appendChild(avatar(config.avatar));
    launcher.appendChild(element('span', 'label', config.label));

    root.appendChild(panel);
    if (bubble) root.appendChild(bubble);
    root.appendChild(launcher);

    let session = null; // { conversationId, token } while a conversation is going on
    let starting = false;
    let replying = false;
    let handsFree = false; // voice mode: listen again after each spoken reply, until the visitor stops
    let recognition = null;

    /** Where the keyboard goes when the panel opens. */
    function focusTarget() {
      if (chat.hidden) return nameInput || phoneInput || start;
      if (!ended.hidden) return restart;
      return recognition ? mic : input;
    }

    function setOpen(open, moveFocus) {
      panel.hidden = !open;
      launcher.setAttribute('aria-expanded', open ? 'true' : 'false');
      if (bubble && open) bubble.hidden = true;
      if (!open) stopVoice();
      if (moveFocus === false) return;
      if (open) focusTarget().focus();
      else launcher.focus();
    }

    function scrollToEnd() { transcript.scrollTop = transcript.scrollHeight; }

    /** Adds a message to the transcript; returns its text node's element, to fill as the reply streams. */
    function addMessage(speaker, text) {
      const item = element('li', 'message ' + speaker);
      item.appendChild(element('span', 'sr-only', speaker === 'user' ? 'You: ' : agentName + ': '));
      const body = element('span', 'text', text);
      item.appendChild(body);
      transcript.appendChild(item);
      scrollToEnd();
      return body;
    }

    /** What screen readers say: the agent's completed replies, not every streamed piece. */
    function announce(text) {
      announcer.textContent = '';
      announcer.appendChild(element('p', '', agentName + ': ' + text));
    }

    function showConversation(messages) {
      form.hidden = true;
      chat.hidden = false;
      ended.hidden = true;
      composer.hidden = false;
      tools.hidden = false;
      error.textContent = '';
      notice.textContent = '';
      transcript.textContent = '';
      messages.forEach(function (message) { addMessage(message.speaker, message.text); });
      if (voiceMode && Recognition) mic.hidden = false;
      else if (voiceMode) notice.textContent = 'Voice is not available in this browser: type your message instead.';
    }

    function showEnded(text) {
      stopVoice();
      forgetSession();
      session = null;
      composer.hidden = true;
      tools.hidden = true;
      endedText.textContent = text;
      ended.hidden = false;
      restart.focus();
    }

    function setReplying(value) {
      replying = value;
      send.setAttribute('aria-disabled', value ? 'true' : 'false');
    }

    /** The visitor says something (typed or heard): it is sent, and the reply streams into the transcript. */
    async function say(text) {
      const current = session;
      stopListening();
      setReplying(true);
      error.textContent = '';
      const question = addMessage('user', text).parentNode;
      const reply = addMessage('agent', '\u2026');
      reply.parentNode.classList.add('pending');
      let received = '';
      let whole = null;
      try {
        whole = await sendMessage(current, text, function (piece) {
          received += piece;
          reply.textContent = received;
          reply.parentNode.classList.remove('pending');
          scrollToEnd();
        });
      } catch (failure) {
        if (session === current) showFailure(failure, text, question, received ? null : reply.parentNode);
      }
      setReplying(false);
      if (whole === null || session !== current) return; // failed, or ended meanwhile
      reply.textContent = whole; // "done" is authoritative (an apology replaces a provider's broken pieces)
      reply.parentNode.classList.remove('pending');
      announce(whole);
      if (voiceMode) speak(whole, language, listenAgain);
    }

    function showFailure(failure, text, question, emptyReply) {
      if (emptyReply) emptyReply.remove();
      if (failure.status === 410 || failure.status === 404) { showEnded(describeError(failure)); return; }
      if (failure.status !== INTERRUPTED) { // not taken: the message goes back to the text box, to send again
        question.remove();
        if (!input.value) input.value = text;
      }
      error.textContent = describeError(failure);
    }

    function sendTyped() {
      const text = input.value.trim();
      if (!text || replying || !session) return;
      input.value = '';
      say(text);
    }

    function listenAgain() {
      if (handsFree && session && !replying && !panel.hidden) listen();
    }

    function setListening(on) {
      listening.hidden = !on;
      mic.textContent = on ? 'Stop listening' : 'Speak';
      mic.classList.toggle('on', on);
    }

    /** Listens for one utterance in the agent's language, shows it in the text box as it is heard, and says it. */
    function listen() {
      if (!Recognition || recognition) return;
      stopSpeaking();
      const current = new Recognition();
      let heard = '';
      let failure = '';
      current.lang = language;
      current.interimResults = true;
      current.continuous = false;
      current.onresult = function (event) {
        let interim = '';
        for (let i = event.resultIndex; i < event.results.length; i++) {
          if (event.results[i].isFinal) heard += event.results[i][0].transcript;
          else interim += event.results[i][0].transcript;
        }
        input.value = (heard + interim).trim();
      };
      current.onerror = function (event) { failure = event.error || 'error'; };
      current.onend = function () {
        if (recognition !== current) return; // stopped by the visitor: what was heard stays in the text box
        recognition = null;
        setListening(false);
        const text = heard.trim();
        if (text && !failure) {
          if (replying) return; // the previous reply is still coming: what was heard waits in the text box
          input.value = '';
          say(text);
          return;
        }
        handsFree = false;
        if (failure === 'not-allowed' || failure === 'service-not-allowed' || failure === 'audio-capture') {
          notice.textContent = 'The microphone is not available: type your message instead.';
        } else {
          notice.textContent = 'Nothing was heard. Press Speak to try again, or type your message.';
        }
      };
      recognition = current;
      notice.textContent = '';
      setListening(true);
      try {
        current.start();
      } catch (startFailure) {
        recognition = null;
        setListening(false);
        notice.textContent = 'The microphone is not available: type your message instead.';
      }
    }

    function stopListening() {
      const current = recognition;
      recognition = null;
      setListening(false);
      if (current) current.abort();
    }

    function stopVoice() {
      handsFree = false;
      stopListening();
      stopSpeaking();
    }

    /** Voice mode after Start: the greeting is spoken, then the widget listens. */
    function beginVoice(greeting) {
      if (!Recognition) { speak(greeting, language, function () {}); input.focus(); return; }
      handsFree = true;
      mic.focus();
      speak(greeting, language, listenAgain);
    }

    form.addEventListener('submit', async function (event) {
      event.preventDefault();
      if (starting) return;
      const visitor = { name: nameInput ? nameInput.value.trim() : '', phone: phoneInput ? phoneInput.value.trim() : '' };
      const detail = { siteKey: siteKey, mode: config.mode, name: visitor.name, phone: visitor.phone };
      const builtIn = host.dispatchEvent(new CustomEvent('voice-agent-widget:start', { detail: detail, bubbles: true, composed: true, cancelable: true }));
      status.textContent = voiceMode ? 'Starting the call\u2026' : 'Starting the chat\u2026';
      if (!builtIn) return; // the page called preventDefault(): its own runtime takes over
      starting = true;
      start.setAttribute('aria-disabled', 'true');
      try {
        const started = await startSession(visitor);
        session = started.session;
        saveSession(session);
        status.textContent = '';
        showConversation(started.greeting ? [{ speaker: 'agent', text: started.greeting }] : []);
        if (started.greeting) announce(started.greeting);
        if (voiceMode) beginVoice(started.greeting);
        else input.focus();
      } catch (failure) {
        status.textContent = failure.status === 409 ? 'This assistant is not available at the moment.' : describeError(failure);
      } finally {
        starting = false;
        start.setAttribute('aria-disabled', 'false');
      }
    });

    composer.addEventListener('submit', function (event) {
      event.preventDefault();
      sendTyped();
      input.focus();
    });
    input.addEventListener('keydown', function (event) {
      if (event.key !== 'Enter' || event.shiftKey || event.isComposing) return;
      event.preventDefault();
      sendTyped();
    });
    mic.addEventListener('click', function () {
      if (recognition) { handsFree = false; stopListening(); return; }
      handsFree = true;
      listen();
    });
    end.addEventListener('click', async function () {
      stopVoice();
      try {
        await endConversation(session);
      } catch (failure) {
        if (failure.status !== 404) { error.textContent = describeError(failure); return; }
      }
      showEnded(voiceMode ? 'The call has ended. Thank you!' : 'The chat has ended. Thank you!');
    });
    restart.addEventListener('click', function () {
      chat.hidden = true;
      form.hidden = false;
      (nameInput || phoneInput || start).focus();
    });
    launcher.addEventListener('click', function () { setOpen(panel.hidden); });
    close.addEventListener('click', function () { setOpen(false); });
    panel.addEventListener('keydown', function (event) { if (event.key === 'Escape') setOpen(false); });
    document.body.appendChild(host);

    if (restored) { // the page was reloaded mid-conversation: show it again, without taking the keyboard
      session = restored.session;
      showConversation(restored.messages);
      setOpen(true, false);
    }
  }

  function whenReady(callback) {
    if (document.body) callback();
    else document.addEventListener('DOMContentLoaded', callback);
  }

  const config = fetch(base + '/widget/config/' + encodeURIComponent(siteKey), { credentials: 'omit' })
    .then(function (response) {
      if (!response.ok) throw new Error('configuration refused (HTTP ' + response.status + ')');
      return response.json();
    });
  Promise.all([config, restorableConversation()])
    .then(function (results) { whenReady(function () { render(results[0], results[1]); }); })
    .catch(function (error) {
      if (window.console) console.warn('[voice-agent widget] not shown: ' + (error && error.message));
    });
})();
`;

export const EMBED_SCRIPT = SOURCE.replace('__VERSION__', String(WIDGET_SCRIPT_VERSION));

/** Strong validator for conditional GETs of the script. */
export const EMBED_SCRIPT_ETAG = `"${createHash('sha256').update(EMBED_SCRIPT).digest('base64url').slice(0, 22)}"`;

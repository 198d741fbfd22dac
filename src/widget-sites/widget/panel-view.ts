/**
 * The widget's shadow tree: a <voice-agent-widget> host whose styles the page cannot change (`all: initial` on the
 * host, the styles inside the shadow root), the launcher at the configured corner, the greeting bubble, and the
 * panel: the form before the conversation, then the transcript, the text box, the call's controls and End.
 */
import { avatar, button, element, field, limitCharacters } from './dom';
import { STYLE } from './styles';

export const MAX_MESSAGE_LENGTH = 2000;
const MAX_NAME_LENGTH = 200;
const MAX_PHONE_LENGTH = 50;

export interface WidgetConfig {
  position: string;
  mode: string;
  agentName?: string;
  label: string;
  avatar: string;
  greeting?: string;
  askName: boolean;
  askPhone: boolean;
  language?: string;
}

export function buildPanel(config: WidgetConfig, withBubble: boolean) {
  const left = config.position === 'bottom-left';
  const voiceMode = config.mode === 'voice';
  const agentName = config.agentName || config.label;
  const host = document.createElement('voice-agent-widget');
  host.style.cssText =
    'all: initial !important; display: block !important; position: fixed !important; z-index: 2147483000 !important; bottom: 20px !important; ' +
    (left ? 'left' : 'right') +
    ': 20px !important;';
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

  // The conversation: the transcript, what went wrong, the text box, the call's controls and End.
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
  const mute = button('mute', 'Mute');
  mute.setAttribute('aria-pressed', 'false');
  mute.hidden = true;
  const end = button('end', voiceMode ? 'End call' : 'End chat');
  tools.appendChild(listening);
  tools.appendChild(mute);
  tools.appendChild(end);
  const ended = element('div', 'ended');
  ended.hidden = true;
  const endedText = element('p');
  const restart = button('restart', voiceMode ? 'New call' : 'New chat');
  ended.appendChild(endedText);
  ended.appendChild(restart);
  const announcer = element('div', 'sr-only announcer');
  announcer.setAttribute('aria-live', 'polite');
  [transcript, notice, error, composer, tools, ended, announcer].forEach((node) => chat.appendChild(node));
  panel.appendChild(chat);

  let bubble: HTMLParagraphElement | null = null;
  if (config.greeting && withBubble) {
    const shown = element('p', 'bubble', config.greeting);
    const dismiss = button('dismiss', '\u00d7', 'Dismiss greeting');
    dismiss.addEventListener('click', () => (shown.hidden = true));
    shown.appendChild(dismiss);
    bubble = shown;
  }

  const launcher = button('launcher');
  launcher.setAttribute('aria-expanded', 'false');
  launcher.setAttribute('aria-controls', panel.id);
  launcher.appendChild(avatar(config.avatar));
  launcher.appendChild(element('span', 'label', config.label));

  root.appendChild(panel);
  if (bubble) root.appendChild(bubble);
  root.appendChild(launcher);

  return {
    host,
    agentName,
    voiceMode,
    panel,
    close,
    form,
    nameInput,
    phoneInput,
    start,
    status,
    chat,
    transcript,
    notice,
    error,
    composer,
    input,
    send,
    tools,
    listening,
    mute,
    end,
    ended,
    endedText,
    restart,
    announcer,
    bubble,
    launcher,
  };
}

export type PanelView = ReturnType<typeof buildPanel>;

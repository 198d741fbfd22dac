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
 * "Start" dispatches a `voice-agent-widget:start` DOM event ({ siteKey, mode, name, phone }) that bubbles
 * out of the widget: the hook for the voice/chat runtime.
 *
 * Kept as a string (no `${`, no backticks inside) so that it ships with the compiled server unchanged.
 */
const SOURCE = String.raw`(function () {
  'use strict';
  var VERSION = '__VERSION__';
  var script = document.currentScript;
  if (!script || !script.getAttribute('data-site-key')) {
    script = null;
    var candidates = document.querySelectorAll('script[data-site-key]');
    for (var i = 0; i < candidates.length; i++) {
      if (/\/widget\/embed\.js/.test(candidates[i].src) && !candidates[i].hasAttribute('data-voice-agent-started')) { script = candidates[i]; break; }
    }
  }
  if (!script) return;
  script.setAttribute('data-voice-agent-started', '');
  var siteKey = script.getAttribute('data-site-key') || '';
  var started = window.__voiceAgentWidgets || (window.__voiceAgentWidgets = {});
  if (!siteKey || started[siteKey]) return;
  started[siteKey] = VERSION;
  var base = script.src.slice(0, script.src.indexOf('/widget/embed.js'));

  var AVATARS = {
    'default': '<path d="M12 3C7 3 3 6.6 3 11c0 2.4 1.2 4.6 3.2 6.1L5.5 21l4.1-2.3c.8.2 1.6.3 2.4.3 5 0 9-3.6 9-8s-4-8-9-8z" fill="currentColor"/>',
    female: '<circle cx="12" cy="9" r="4.2" fill="currentColor"/><path d="M7.2 8.6C7.2 4.9 9.3 3 12 3s4.8 1.9 4.8 5.6c0 2.5.7 3.8 1.6 4.9-1.6.6-3.1.7-4.2.4M7.2 8.6c0 2.5-.7 3.8-1.6 4.9 1.6.6 3.1.7 4.2.4" fill="none" stroke="currentColor" stroke-width="1.6"/><path d="M4.5 21c.8-3.6 3.9-5.6 7.5-5.6s6.7 2 7.5 5.6z" fill="currentColor"/>',
    male: '<circle cx="12" cy="8.5" r="4.3" fill="currentColor"/><path d="M4.5 21c.8-3.8 3.9-6 7.5-6s6.7 2.2 7.5 6z" fill="currentColor"/>',
    robot: '<rect x="5" y="8" width="14" height="11" rx="3" fill="currentColor"/><circle cx="9.5" cy="13" r="1.6" fill="#fff"/><circle cx="14.5" cy="13" r="1.6" fill="#fff"/><path d="M12 8V4.5" stroke="currentColor" stroke-width="1.6"/><circle cx="12" cy="4" r="1.4" fill="currentColor"/>'
  };

  var STYLE = [
    ':host { all: initial; }',
    '* { box-sizing: border-box; }',
    '[hidden] { display: none !important; }',
    '.root { display: flex; flex-direction: column; align-items: flex-end; gap: 12px; font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, Helvetica, Arial, sans-serif; color: #1d2130; -webkit-font-smoothing: antialiased; }',
    '.root.left { align-items: flex-start; }',
    '.launcher { display: inline-flex; align-items: center; gap: 10px; margin: 0; padding: 7px 20px 7px 7px; border: 0; border-radius: 999px; background: #4338ca; color: #fff; font-family: inherit; font-size: 15px; line-height: 1; font-weight: 600; cursor: pointer; box-shadow: 0 8px 24px rgba(30, 27, 75, .28); }',
    '.launcher:hover { background: #3730a3; }',
    '.launcher:focus-visible, button:focus-visible, input:focus-visible { outline: 3px solid #a5b4fc; outline-offset: 2px; }',
    '.avatar { flex: none; display: grid; place-items: center; width: 38px; height: 38px; border-radius: 50%; background: #fff; color: #4338ca; }',
    '.avatar svg { width: 24px; height: 24px; }',
    '.bubble { position: relative; max-width: 260px; margin: 0; padding: 11px 34px 11px 14px; border-radius: 14px; background: #fff; box-shadow: 0 6px 22px rgba(15, 23, 42, .18); }',
    '.dismiss { position: absolute; top: 6px; right: 6px; width: 22px; height: 22px; padding: 0; border: 0; border-radius: 50%; background: transparent; color: #6b7080; font-family: inherit; font-size: 16px; line-height: 1; cursor: pointer; }',
    '.panel { width: 320px; max-width: calc(100vw - 40px); border-radius: 16px; background: #fff; box-shadow: 0 12px 40px rgba(15, 23, 42, .25); overflow: hidden; }',
    '.head { display: flex; align-items: center; gap: 12px; padding: 14px 16px; background: #4338ca; color: #fff; }',
    '.head .avatar { width: 40px; height: 40px; }',
    '.title { margin: 0; font-size: 16px; font-weight: 700; }',
    '.subtitle { margin: 2px 0 0; font-size: 13px; opacity: .85; }',
    '.close { margin-left: auto; width: 30px; height: 30px; padding: 0; border: 0; border-radius: 50%; background: rgba(255, 255, 255, .15); color: #fff; font-family: inherit; font-size: 20px; line-height: 1; cursor: pointer; }',
    'form { display: grid; gap: 12px; margin: 0; padding: 16px; }',
    'label { display: grid; gap: 5px; font-size: 13px; font-weight: 600; color: #3b4052; }',
    'input { width: 100%; margin: 0; padding: 10px 11px; border: 1px solid #c8ccd8; border-radius: 9px; background: #fff; color: #1d2130; font-family: inherit; font-size: 15px; line-height: 1.2; }',
    '.start { margin: 4px 0 0; padding: 11px 14px; border: 0; border-radius: 9px; background: #4338ca; color: #fff; font-family: inherit; font-size: 15px; line-height: 1; font-weight: 600; cursor: pointer; }',
    '.greeting { margin: 0; color: #3b4052; }',
    '.status { margin: 0; font-size: 13px; color: #4b5163; }',
    '.status:empty { display: none; }'
  ].join('\n');

  function element(tag, className, text) {
    var node = document.createElement(tag);
    if (className) node.className = className;
    if (text) node.textContent = text;
    return node;
  }

  function avatar(kind) {
    var node = element('span', 'avatar');
    node.setAttribute('aria-hidden', 'true');
    node.innerHTML = '<svg viewBox="0 0 24 24" xmlns="http://www.w3.org/2000/svg">' + (AVATARS[kind] || AVATARS['default']) + '</svg>';
    return node;
  }

  function field(form, label, name, type, autocomplete) {
    var wrapper = element('label', '', label);
    var input = element('input');
    input.name = name;
    input.type = type;
    input.required = true;
    input.setAttribute('autocomplete', autocomplete);
    if (type === 'tel') { input.pattern = '[0-9+\\(\\)\\-. ]{6,20}'; input.title = 'A phone number, digits with + ( ) - . allowed'; }
    wrapper.appendChild(input);
    form.appendChild(wrapper);
    return input;
  }

  function render(config) {
    var left = config.position === 'bottom-left';
    var host = document.createElement('voice-agent-widget');
    host.style.cssText = 'all: initial !important; display: block !important; position: fixed !important; z-index: 2147483000 !important; bottom: 20px !important; ' + (left ? 'left' : 'right') + ': 20px !important;';
    var shadow = host.attachShadow({ mode: 'open' });
    var style = element('style');
    style.textContent = STYLE;
    var root = element('div', left ? 'root left' : 'root');
    shadow.appendChild(style);
    shadow.appendChild(root);

    var panel = element('section', 'panel');
    panel.id = 'voice-agent-panel';
    panel.setAttribute('role', 'dialog');
    panel.setAttribute('aria-label', config.agentName || config.label);
    panel.hidden = true;
    var head = element('div', 'head');
    head.appendChild(avatar(config.avatar));
    var titles = element('div');
    titles.appendChild(element('p', 'title', config.agentName || config.label));
    titles.appendChild(element('p', 'subtitle', config.mode === 'chat' ? 'Chat assistant' : 'Voice assistant'));
    head.appendChild(titles);
    var close = element('button', 'close', '\u00d7');
    close.type = 'button';
    close.setAttribute('aria-label', 'Close');
    head.appendChild(close);
    panel.appendChild(head);

    var form = element('form');
    if (config.greeting) form.appendChild(element('p', 'greeting', config.greeting));
    var nameInput = config.askName ? field(form, 'Your name', 'name', 'text', 'name') : null;
    var phoneInput = config.askPhone ? field(form, 'Phone number', 'phone', 'tel', 'tel') : null;
    var start = element('button', 'start', config.mode === 'chat' ? 'Start chat' : 'Start call');
    start.type = 'submit';
    form.appendChild(start);
    var status = element('p', 'status');
    status.setAttribute('role', 'status');
    form.appendChild(status);
    panel.appendChild(form);

    var bubble = null;
    if (config.greeting) {
      bubble = element('p', 'bubble', config.greeting);
      var dismiss = element('button', 'dismiss', '\u00d7');
      dismiss.type = 'button';
      dismiss.setAttribute('aria-label', 'Dismiss greeting');
      dismiss.addEventListener('click', function () { bubble.hidden = true; });
      bubble.appendChild(dismiss);
    }

    var launcher = element('button', 'launcher');
    launcher.type = 'button';
    launcher.setAttribute('aria-expanded', 'false');
    launcher.setAttribute('aria-controls', panel.id);
    launcher.appendChild(avatar(config.avatar));
    launcher.appendChild(element('span', 'label', config.label));

    root.appendChild(panel);
    if (bubble) root.appendChild(bubble);
    root.appendChild(launcher);

    function setOpen(open) {
      panel.hidden = !open;
      launcher.setAttribute('aria-expanded', open ? 'true' : 'false');
      if (bubble && open) bubble.hidden = true;
      if (open) (nameInput || phoneInput || start).focus();
      else launcher.focus();
    }
    launcher.addEventListener('click', function () { setOpen(panel.hidden); });
    close.addEventListener('click', function () { setOpen(false); });
    panel.addEventListener('keydown', function (event) { if (event.key === 'Escape') setOpen(false); });
    form.addEventListener('submit', function (event) {
      event.preventDefault();
      var detail = { siteKey: siteKey, mode: config.mode, name: nameInput ? nameInput.value.trim() : '', phone: phoneInput ? phoneInput.value.trim() : '' };
      host.dispatchEvent(new CustomEvent('voice-agent-widget:start', { detail: detail, bubbles: true, composed: true }));
      status.textContent = config.mode === 'chat' ? 'Starting the chat\u2026' : 'Starting the call\u2026';
    });
    document.body.appendChild(host);
  }

  function whenReady(callback) {
    if (document.body) callback();
    else document.addEventListener('DOMContentLoaded', callback);
  }

  fetch(base + '/widget/config/' + encodeURIComponent(siteKey), { credentials: 'omit' })
    .then(function (response) {
      if (!response.ok) throw new Error('configuration refused (HTTP ' + response.status + ')');
      return response.json();
    })
    .then(function (config) { whenReady(function () { render(config); }); })
    .catch(function (error) {
      if (window.console) console.warn('[voice-agent widget] not shown: ' + (error && error.message));
    });
})();
`;

export const EMBED_SCRIPT = SOURCE.replace('__VERSION__', String(WIDGET_SCRIPT_VERSION));

/** Strong validator for conditional GETs of the script. */
export const EMBED_SCRIPT_ETAG = `"${createHash('sha256').update(EMBED_SCRIPT).digest('base64url').slice(0, 22)}"`;

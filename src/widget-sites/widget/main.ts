/**
 * The source of `GET /widget/embed.js`, which customers' pages load through the snippet. It reads its site key
 * from its own <script data-site-key>, fetches /widget/config/{siteKey} from the address it was loaded from, and
 * renders the widget (nothing when the config is refused: domain not allowed, unknown key). A second copy of the
 * script for the same key does nothing.
 */
import { WidgetConfig } from './panel-view';
import { Restored, SavedSession } from './saved-session';
import { renderWidget } from './widget';

declare const WIDGET_VERSION: string;

declare global {
  interface Window {
    __voiceAgentWidgets?: Record<string, string>;
  }
}

/** The snippet's <script>: document.currentScript, or (loaded some other way) the first embed.js not yet started. */
function ownScript(): HTMLScriptElement | null {
  const current = document.currentScript as HTMLScriptElement | null;
  if (current && current.getAttribute('data-site-key')) return current;
  const candidates = document.querySelectorAll<HTMLScriptElement>('script[data-site-key]');
  for (const candidate of Array.from(candidates)) {
    if (/\/widget\/embed\.js/.test(candidate.src) && !candidate.hasAttribute('data-voice-agent-started')) return candidate;
  }
  return null;
}

function whenReady(callback: () => void): void {
  if (document.body) callback();
  else document.addEventListener('DOMContentLoaded', callback);
}

function boot(): void {
  const script = ownScript();
  if (!script) return;
  script.setAttribute('data-voice-agent-started', '');
  const siteKey = script.getAttribute('data-site-key') || '';
  const started = window.__voiceAgentWidgets || (window.__voiceAgentWidgets = {});
  if (!siteKey || started[siteKey]) return;
  started[siteKey] = WIDGET_VERSION;
  const base = script.src.slice(0, script.src.indexOf('/widget/embed.js'));
  const saved = new SavedSession('voice-agent-widget:' + siteKey);

  const config = fetch(base + '/widget/config/' + encodeURIComponent(siteKey), { credentials: 'omit' }).then((response) => {
    if (!response.ok) throw new Error('configuration refused (HTTP ' + response.status + ')');
    return response.json() as Promise<WidgetConfig>;
  });
  Promise.all([config, saved.restorable(base)])
    .then(([loaded, restored]: [WidgetConfig, Restored | null]) =>
      whenReady(() => renderWidget({ base, siteKey, saved }, loaded, restored)),
    )
    .catch((error: unknown) => {
      if (window.console) console.warn('[voice-agent widget] not shown: ' + (error instanceof Error ? error.message : String(error)));
    });
}

boot();

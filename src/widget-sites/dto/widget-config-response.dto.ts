import { WidgetConfigRow } from '../widget-sites.repository';
import type { WidgetAvatar, WidgetMode, WidgetPosition } from '../widget-options';

/** What the embedded widget needs to render, and nothing else: no account, no agent id, no prompt. */
export class WidgetConfigResponse {
  /** The launcher button's text. @example "Talk to us" */
  label: string;
  /** @example "bottom-right" */
  position: WidgetPosition;
  /** @example "default" */
  avatar: WidgetAvatar;
  /** Greeting bubble text; "" for none. @example "Hi! Questions about your order?" */
  greeting: string;
  /** @example "voice" */
  mode: WidgetMode;
  /** @example true */
  askName: boolean;
  /** @example true */
  askPhone: boolean;
  /** Display name of the agent that answers; null when the site has no agent. @example "Reception desk" */
  agentName: string | null;
  /** The agent's reply language (for speech recognition and synthesis); null when the site has no agent. @example "hi-IN" */
  language: string | null;
}

export function toWidgetConfigResponse(site: WidgetConfigRow): WidgetConfigResponse {
  return {
    label: site.widgetLabel,
    position: site.widgetPosition,
    avatar: site.widgetAvatar,
    greeting: site.widgetGreeting,
    mode: site.widgetMode,
    askName: site.widgetAskName,
    askPhone: site.widgetAskPhone,
    agentName: site.agentName,
    language: site.agentLanguage,
  };
}

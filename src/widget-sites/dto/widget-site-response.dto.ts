import { ApiProperty } from '@nestjs/swagger';
import { ApiDateTime } from '../../common/api-formats';
import type { ResponseContext } from '../../common/responds';
import { embedSnippet } from '../embed-snippet';
import { WidgetSiteRow } from '../widget-sites.repository';
import type { WidgetAvatar, WidgetMode, WidgetPosition } from '../widget-options';

export class WidgetSiteResponse {
  /** @example 7 */
  @ApiProperty({ type: 'integer' })
  id: number;
  /** @example "Acme storefront" */
  name: string;
  /** The agent that answers the site; null when none (or after that agent was deleted). @example 42 */
  @ApiProperty({ type: 'integer', nullable: true })
  agentId: number | null;
  /** The version of the agent the site's conversations run; null: its latest published version. @example 3 */
  @ApiProperty({ type: 'integer', nullable: true })
  agentVersion: number | null;
  /** "" means any site. @example "*.example.com" */
  allowedDomain: string;
  /** @example "bottom-right" */
  widgetPosition: WidgetPosition;
  /** @example "Talk to us" */
  widgetLabel: string;
  /** @example "default" */
  widgetAvatar: WidgetAvatar;
  /** @example "Hi! Questions about your order?" */
  widgetGreeting: string;
  /** @example "voice" */
  widgetMode: WidgetMode;
  /** @example true */
  widgetAskName: boolean;
  /** @example true */
  widgetAskPhone: boolean;
  /** Public key of the embed snippet; `POST /widget/sites/{siteId}/rotate-key` replaces it. @example "ws_3q2-7wVhZ0kq9yXb1mT4cR8sLdE6uJfA" */
  siteKey: string;
  /** The HTML to paste into the site's pages, built from PUBLIC_BASE_URL. */
  @ApiProperty({
    example:
      '<script src="https://api.example.com/widget/embed.js?v=2" data-site-key="ws_3q2-7wVhZ0kq9yXb1mT4cR8sLdE6uJfA" async></script>',
  })
  embedSnippet: string;
  /** @example "2026-11-22T09:15:02.123Z" */
  @ApiDateTime()
  createdAt: string;
  /** @example "2026-11-22T09:15:02.123Z" */
  @ApiDateTime()
  updatedAt: string;
}

export function toWidgetSiteResponse(site: WidgetSiteRow, { publicBaseUrl }: ResponseContext): WidgetSiteResponse {
  return {
    id: site.id,
    name: site.name,
    agentId: site.agentId,
    agentVersion: site.agentVersion,
    allowedDomain: site.allowedDomain,
    widgetPosition: site.widgetPosition,
    widgetLabel: site.widgetLabel,
    widgetAvatar: site.widgetAvatar,
    widgetGreeting: site.widgetGreeting,
    widgetMode: site.widgetMode,
    widgetAskName: site.widgetAskName,
    widgetAskPhone: site.widgetAskPhone,
    siteKey: site.siteKey,
    embedSnippet: embedSnippet(publicBaseUrl, site.siteKey),
    createdAt: site.createdAt.toISOString(),
    updatedAt: site.updatedAt.toISOString(),
  };
}

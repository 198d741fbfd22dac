import { IsDefined, IsString } from 'class-validator';
import { CodePointLength, Trim } from '../../common/validators';
import { WidgetAvatar, WidgetMode, WidgetPosition } from '../widget-options';
import { WidgetSiteSettingsDto } from './widget-site-settings.dto';

/** `name` is required; every other field is optional and absent fields take these defaults. */
export class CreateWidgetSiteDto extends WidgetSiteSettingsDto {
  /** 1–200 characters after trimming. @example "Acme storefront" */
  @IsDefined({ message: 'name is required' })
  @Trim()
  @IsString()
  @CodePointLength(1, 200)
  name: string;

  agentId?: number | null = null;

  allowedDomain?: string = '';

  widgetPosition?: WidgetPosition = 'bottom-right';

  widgetLabel?: string = 'Talk to us';

  widgetAvatar?: WidgetAvatar = 'default';

  widgetGreeting?: string = '';

  widgetMode?: WidgetMode = 'voice';

  widgetAskName?: boolean = true;

  widgetAskPhone?: boolean = true;
}

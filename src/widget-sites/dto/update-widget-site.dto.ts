import { IsString } from 'class-validator';
import { CodePointLength, IsOmittable, Trim } from '../../common/validators';
import { WidgetSiteSettingsDto } from './widget-site-settings.dto';

/** Any subset of the site's fields; absent fields are left as they are. `agentId: null` detaches the agent. */
export class UpdateWidgetSiteDto extends WidgetSiteSettingsDto {
  /** 1–200 characters after trimming. @example "Acme storefront (EU)" */
  @IsOmittable()
  @Trim()
  @IsString()
  @CodePointLength(1, 200)
  name?: string;
}

import { ApiProperty } from '@nestjs/swagger';
import { Transform } from 'class-transformer';
import { IsBoolean, IsInt, IsString, Max, Min, ValidateBy, ValidateIf, ValidationOptions } from 'class-validator';
import { AgentVersionPin } from '../../agent-versions/version-pin';
import { MAX_INT_ID } from '../../common/id.pipes';
import { CodePointLength, IsOmittable, IsOneOf, MaxCodePointLength, Trim } from '../../common/validators';
import { normaliseAllowedDomain } from '../allowed-domain';
import { WIDGET_AVATARS, WIDGET_MODES, WIDGET_POSITIONS, type WidgetAvatar, type WidgetMode, type WidgetPosition } from '../widget-options';

/** A pasted URL or a mixed-case host becomes its stored form; an invalid value is left for @IsAllowedDomain to refuse. */
const NormaliseDomain = () =>
  Transform(({ value }: { value: unknown }) => {
    if (typeof value !== 'string') return value;
    const result = normaliseAllowedDomain(value);
    return result.ok ? result.domain : value;
  });

const IsAllowedDomain = (options?: ValidationOptions) =>
  ValidateBy(
    {
      name: 'isAllowedDomain',
      validator: {
        validate: (value) => typeof value === 'string' && normaliseAllowedDomain(value).ok,
        defaultMessage: (args) => {
          const value: unknown = args?.value;
          const result = typeof value === 'string' ? normaliseAllowedDomain(value) : undefined;
          return `allowedDomain ${result && !result.ok ? result.problem : 'must be a string'}`;
        },
      },
    },
    options,
  );

/**
 * Every setting of a widget site except its name, all optional with the same rules on create and PATCH.
 * (`siteKey` is not among them: it is generated, and sending it is an unknown-field 400.)
 */
export class WidgetSiteSettingsDto {
  /** An agent of this account that answers the site, or null for none. @example 42 */
  @ValidateIf((_object, value) => value !== undefined && value !== null)
  @ApiProperty({ type: 'integer', required: false, nullable: true, minimum: 1, maximum: MAX_INT_ID })
  @IsInt()
  @Min(1)
  @Max(MAX_INT_ID)
  agentId?: number | null;

  @AgentVersionPin()
  agentVersion?: number | null;

  /**
   * Where the widget may run: "" for any site, a host (`example.com`), `*.example.com` for it and all its
   * subdomains, or `localhost:5173` for development. A pasted URL is reduced to its host; stored lowercase.
   * @example "*.example.com"
   */
  @IsOmittable()
  @NormaliseDomain()
  @IsString()
  @IsAllowedDomain()
  allowedDomain?: string;

  /** @example "bottom-right" */
  @IsOmittable()
  @IsOneOf(WIDGET_POSITIONS)
  widgetPosition?: WidgetPosition;

  /** The launcher button's text, 1–40 characters after trimming. @example "Talk to us" */
  @IsOmittable()
  @Trim()
  @IsString()
  @CodePointLength(1, 40)
  widgetLabel?: string;

  /** @example "default" */
  @IsOmittable()
  @IsOneOf(WIDGET_AVATARS)
  widgetAvatar?: WidgetAvatar;

  /**
   * Text of the greeting bubble beside the launcher (and a widget conversation's first message), at most 500
   * characters after trimming; "" (or only spaces) for none. @example "Hi! Questions about your order?"
   */
  @IsOmittable()
  @Trim()
  @IsString()
  @MaxCodePointLength(500)
  widgetGreeting?: string;

  /** @example "voice" */
  @IsOmittable()
  @IsOneOf(WIDGET_MODES)
  widgetMode?: WidgetMode;

  /** Whether the widget asks the visitor's name before starting. @example true */
  @IsOmittable()
  @IsBoolean()
  widgetAskName?: boolean;

  /** Whether the widget asks the visitor's phone number before starting. @example true */
  @IsOmittable()
  @IsBoolean()
  widgetAskPhone?: boolean;
}

/** The allowed values and defaults of a widget site's settings: the one place they are defined. */

export const WIDGET_POSITIONS = ['bottom-right', 'bottom-left'] as const;
export type WidgetPosition = (typeof WIDGET_POSITIONS)[number];

export const WIDGET_MODES = ['voice', 'chat'] as const;
export type WidgetMode = (typeof WIDGET_MODES)[number];

export const WIDGET_AVATARS = ['default', 'female', 'male', 'robot'] as const;
export type WidgetAvatar = (typeof WIDGET_AVATARS)[number];

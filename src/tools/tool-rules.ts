/** The tools' types and limits (contract section 18): the one place they are defined. */

export const TOOL_TYPES = ['webhook', 'end_call', 'transfer_call'] as const;
export type ToolType = (typeof TOOL_TYPES)[number];

/** What a Chat Completions function name may be; unique within the account. */
export const TOOL_NAME_PATTERN = /^[A-Za-z0-9_-]{1,64}$/;
export const MAX_DESCRIPTION_LENGTH = 1_000;
export const MIN_TIMEOUT_SECONDS = 1;
export const MAX_TIMEOUT_SECONDS = 60;
export const DEFAULT_TIMEOUT_SECONDS = 10;
export const MAX_SPEAK_WHILE_RUNNING_LENGTH = 200;
/** A transfer's number: E.164, `+` and 8–15 digits (as a phone number's, section 17). */
export const TRANSFER_NUMBER_PATTERN = /^\+\d{8,15}$/;
/** The most tools one agent may have. */
export const MAX_TOOLS_PER_AGENT = 20;

/** The fields each type takes besides `name` and `description` (the others are a 400 naming them). */
export const TYPE_FIELDS: Record<ToolType, readonly string[]> = {
  webhook: ['parameters', 'url', 'timeoutSeconds', 'speakWhileRunning'],
  end_call: [],
  transfer_call: ['number'],
};

/** The fields a type needs on create. */
export const REQUIRED_FIELDS: Record<ToolType, readonly string[]> = {
  webhook: ['name', 'description', 'url'],
  end_call: [],
  transfer_call: ['name', 'description', 'number'],
};

/** An end_call tool's name when none is given. */
export const DEFAULT_END_CALL_NAME = 'end_call';
/** The parameters of a webhook tool created without any: no arguments. */
export const NO_PARAMETERS = { type: 'object', properties: {} };

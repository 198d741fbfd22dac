/**
 * Rotating signing secrets, shared by every resource whose requests are signed as Standard Webhooks (webhooks,
 * tools): its row has `secret`, `previous_secret` and `previous_secret_expires_at`. A rotation makes a new
 * secret (generateWebhookSecret) current and keeps the one before signing beside it for SECRET_OVERLAP_HOURS,
 * so that a receiver can switch to the new one without missing a request.
 */

/** How long the previous secret still signs after a rotation. */
export const SECRET_OVERLAP_HOURS = 24;

/**
 * SQL of the SET list of an UPDATE that rotates the row's secret: `secret` and `hours` are the statement's
 * parameters (`$3`) holding the new secret and the overlap in hours.
 */
export const rotatedSecretColumns = (secret: string, hours: string) =>
  `previous_secret = secret, previous_secret_expires_at = now() + make_interval(hours => ${hours}), secret = ${secret}`;

/** SQL of the secrets that sign now, as an array (the current one first, then the previous one during its overlap), of the row `alias`. */
export const activeSecrets = (alias: string) =>
  `CASE WHEN ${alias}.previous_secret_expires_at > now() THEN ARRAY[${alias}.secret, ${alias}.previous_secret] ELSE ARRAY[${alias}.secret] END`;

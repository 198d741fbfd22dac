/**
 * The API-key lookup by hash, as the service runs it on a cache miss (ApiKeysRepository.findActiveByHash's
 * check: not revoked, not expired): used by the baseline server for its key check and by the runner for
 * EXPLAIN ANALYZE. (Every other query comes from the service's repositories.)
 */
export const AUTH_SQL = `SELECT account.id AS id, account.name AS name, account.is_platform AS "isPlatform", key.id AS "keyId", key.scopes
  FROM api_keys key INNER JOIN accounts account ON account.id = key.account_id
  WHERE key.key_hash = $1 AND key.revoked_at IS NULL AND (key.expires_at IS NULL OR key.expires_at > now())`;

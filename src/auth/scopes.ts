/** What an API key may do: `read` is GET (and HEAD), `write` every other method. */
export const API_KEY_SCOPES = ['read', 'write'] as const;
export type ApiKeyScope = (typeof API_KEY_SCOPES)[number];

/** The scopes as stored and answered: each once, in API_KEY_SCOPES order, whatever order they were given in. */
export const canonicalScopes = (scopes: readonly ApiKeyScope[]): ApiKeyScope[] => API_KEY_SCOPES.filter((scope) => scopes.includes(scope));

/** The scope a request of this method needs when its route asks for none in particular. */
export const scopeForMethod = (method: string): ApiKeyScope => (method === 'GET' || method === 'HEAD' ? 'read' : 'write');

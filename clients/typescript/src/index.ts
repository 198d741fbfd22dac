/**
 * A typed client for the Voice Agent API: every path, parameter, body and response of openapi.json as
 * TypeScript types (./schema.ts, generated), with the calls made by openapi-fetch.
 *
 *   const api = createClient({ baseUrl: 'https://api.example.com', apiKey: process.env.VOICE_AGENT_API_KEY! });
 *   const { data: agent, error } = await api.POST('/agents', { body: { name: 'Reception' } });
 */
import createFetchClient, { type Client } from 'openapi-fetch';
import type { components, paths, webhooks } from './schema';

export type { components, operations, paths, webhooks } from './schema';
export type ApiClient = Client<paths>;
/** A resource as the API returns it, by schema name: `Schema<'AgentResponse'>`. */
export type Schema<Name extends keyof components['schemas']> = components['schemas'][Name];

/**
 * What the service POSTs to a customer's URL, by the name of its webhook in openapi.json: an event's body by its
 * type (`WebhookPayload<'call.created'>`), or a webhook tool's call (`WebhookPayload<'tool-call'>`).
 */
export type WebhookPayload<Name extends keyof webhooks> = Name extends keyof webhooks
  ? webhooks[Name] extends { post: { requestBody: { content: { 'application/json': infer Body } } } }
    ? Body
    : never
  : never;
/** Every webhook event's body, a union told apart by `type`. */
export type WebhookEvent = WebhookPayload<'call.created' | 'call.recording.ready' | 'call.deleted' | 'ping'>;
/** A webhook tool's request body. */
export type ToolCallRequest = WebhookPayload<'tool-call'>;
/** A message of the voice socket, each way. */
export type VoiceClientMessage = Schema<'VoiceClientMessage'>;
export type VoiceServerMessage = Schema<'VoiceServerMessage'>;
/** A message of the carrier's media stream (Twilio Media Streams), each way: unions on `event`. */
export type TwilioStreamFromCarrier = Schema<'TwilioStreamFromCarrier'>;
export type TwilioStreamToCarrier = Schema<'TwilioStreamToCarrier'>;

export interface ClientOptions {
  /** The service's address, e.g. `https://api.example.com` (no trailing slash needed). */
  baseUrl: string;
  /** An API key (`vak_…`); sent as `X-Api-Key` on every request. */
  apiKey: string;
  /** Another fetch implementation (tests, proxies); the global one by default. */
  fetch?: typeof globalThis.fetch;
}

export function createClient({ baseUrl, apiKey, fetch }: ClientOptions): ApiClient {
  return createFetchClient<paths>({ baseUrl: baseUrl.replace(/\/+$/, ''), headers: { 'X-Api-Key': apiKey }, fetch });
}

/**
 * The `before` cursor of the next page of a list (from its `Link: <…>; rel="next"` header), or undefined on
 * the last page: `api.GET('/calls', { params: { query: { before: nextCursor(response) } } })`.
 */
export function nextCursor(response: Response): string | undefined {
  const link = response.headers.get('link');
  const next = link?.split(',').find((part) => /;\s*rel="?next"?/.test(part));
  const url = next && /<([^>]+)>/.exec(next)?.[1];
  return url ? (new URL(url).searchParams.get('before') ?? undefined) : undefined;
}

/** Uploads (or replaces) a call's recording: the MP3 bytes as they are. */
export async function uploadRecording(api: ApiClient, callId: string, mp3: Uint8Array | Blob): Promise<{ ok: boolean; status: number }> {
  const { response } = await api.PUT('/calls/{callId}/recording', {
    params: { path: { callId } },
    body: mp3 as unknown as string,
    bodySerializer: (body: unknown) => body as string, // the bytes as they are
    headers: { 'Content-Type': 'audio/mpeg' },
  });
  return { ok: response.ok, status: response.status };
}

import VoiceResponse from 'twilio/lib/twiml/VoiceResponse';

/**
 * The TwiML the service answers the carrier with, made by the official `twilio` package (which escapes the values).
 * The sentences are short: the caller hears them before the carrier hangs up.
 */
export const NO_AGENT_SENTENCE = 'Sorry, nobody is answering this number at the moment. Goodbye.';
export const NO_LISTENER_SENTENCE = 'Sorry, this service cannot take phone calls at the moment. Goodbye.';
export const CALL_LATER_SENTENCE = 'Sorry, all our lines are busy. Please call again later. Goodbye.';

/** One sentence, then the carrier hangs up. */
export function sayAndHangUp(sentence: string): string {
  const response = new VoiceResponse();
  response.say(sentence);
  response.hangup();
  return response.toString();
}

/** Hangs up at once (a repeated request for a call whose stream has already connected). */
export function hangUp(): string {
  const response = new VoiceResponse();
  response.hangup();
  return response.toString();
}

/** Moves the call to `number` (the agent's transfer_call): the carrier dials it and bridges the caller. */
export function dial(number: string): string {
  const response = new VoiceResponse();
  response.dial().number(number);
  return response.toString();
}

/** Connects the call to the service's media stream, which the one-time `token` opens (`start.customParameters.token`). */
export function connectStream(streamUrl: string, token: string): string {
  const response = new VoiceResponse();
  response.connect().stream({ url: streamUrl }).parameter({ name: 'token', value: token });
  return response.toString();
}

/** The media stream's address: `wss://` (or `ws://` when PUBLIC_BASE_URL is http) and the service's path. */
export const streamUrlOf = (publicBaseUrl: string): string => `${publicBaseUrl.replace(/^http/, 'ws')}/telephony/twilio/stream`;

/** The addresses the carrier is given for a number: its inbound webhook and its status callback. */
export const webhookUrlsOf = (publicBaseUrl: string, phoneNumberId: number): { inboundUrl: string; statusUrl: string } => ({
  inboundUrl: `${publicBaseUrl}/telephony/twilio/${phoneNumberId}/incoming`,
  statusUrl: `${publicBaseUrl}/telephony/twilio/${phoneNumberId}/status`,
});

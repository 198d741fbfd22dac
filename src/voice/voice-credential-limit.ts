import { Injectable } from '@nestjs/common';
import { ThrottlerException } from '@nestjs/throttler';
import { IncomingMessage, ServerResponse } from 'node:http';
import { UnauthenticatedLimit } from '../rate-limit/unauthenticated-limit';
import { WIDGET_CREDENTIAL_COUNTER } from '../rate-limit/widget-rate-limit';

/** The upgrade request, with the client address Express would have given it (`trust proxy`). */
export type VoiceRequest = IncomingMessage & { ip: string };

/** An address over its budget: the 429's message and headers (`Retry-After`, `RateLimit-Policy`, `RateLimit`). */
export interface CredentialBlock {
  message: string;
  headers: Record<string, string>;
}

/**
 * The voice socket's share of the per-address budget of the public widget routes' credentials (WidgetCredentialLimit:
 * UnauthenticatedLimit's `widget-credential` counter, the same for both, so that guesses cost the same over HTTP and
 * over the socket). A socket that proves no conversation token counts as one of those routes' 404s; an address over
 * the limit is refused before any lookup of a conversation.
 */
@Injectable()
export class VoiceCredentialLimit {
  constructor(private readonly unauthenticated: UnauthenticatedLimit) {}

  /** The refusal for an address over the limit (no database work), or undefined. */
  async blocked(request: VoiceRequest): Promise<CredentialBlock | undefined> {
    // `check` sets its refusal's headers on a response: a response of its own, never sent (an upgrade has none).
    const response = new ServerResponse(request);
    try {
      await this.unauthenticated.check(request, response, WIDGET_CREDENTIAL_COUNTER);
      return undefined;
    } catch (error) {
      if (!(error instanceof ThrottlerException)) throw error;
      const headers = Object.entries(response.getHeaders()).map(([name, value]) => [name, String(value)]);
      return { message: error.message, headers: Object.fromEntries(headers) as Record<string, string> };
    }
  }

  /** Counts a socket that proved no token (an unknown conversation, a wrong or malformed token, no `start`). */
  count(request: VoiceRequest): Promise<void> {
    return this.unauthenticated.countAnswered(request, WIDGET_CREDENTIAL_COUNTER);
  }
}

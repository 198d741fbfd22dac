import { Injectable } from '@nestjs/common';
import type { IncomingMessage } from 'node:http';
import { RateLimitRefusal, UnauthenticatedLimit } from '../rate-limit/unauthenticated-limit';
import { WIDGET_CREDENTIAL_COUNTER } from '../rate-limit/widget-rate-limit';

/** The upgrade request, with the client address Express would have given it (`trust proxy`). */
export type VoiceRequest = IncomingMessage & { ip: string };

/** An address over its budget, refused before the upgrade. */
export type CredentialBlock = RateLimitRefusal;

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
  blocked(request: VoiceRequest): Promise<RateLimitRefusal | undefined> {
    return this.unauthenticated.blockedFor(request, WIDGET_CREDENTIAL_COUNTER);
  }

  /** Counts a socket that proved no token (an unknown conversation, a wrong or malformed token, no `start`). */
  count(request: VoiceRequest): Promise<void> {
    return this.unauthenticated.countAnswered(request, WIDGET_CREDENTIAL_COUNTER);
  }
}

import { Injectable, OnApplicationShutdown } from '@nestjs/common';
import { promises as dns } from 'node:dns';
import { isIP } from 'node:net';
import { RequestValidationException } from '../common/validation';
import { AppConfig } from '../config/config';
import { InjectConfig } from '../config/config.module';
import { AddressPolicy, refusalReason } from '../outbound/address-policy';
import { OutboundError, OutboundErrorCode, outboundRequest, PinnedAgents, Resolver } from '../outbound/outbound-http';

export const MAX_WEBHOOK_URL_LENGTH = 2000;

/** How much of a receiver's answer is read: enough for an excerpt in the deliveries log, no more. */
const RESPONSE_BYTES_READ = 1024;
/** A name looked up when a webhook is saved: a slow resolver must not hold the request (delivery checks again anyway). */
const SAVE_LOOKUP_TIMEOUT_MS = 2_000;

/** What a receiver answered to one attempt, or why there was no answer (in words, and as the outbound error's code). */
export type AttemptResult = { statusCode: number; body: Buffer } | { error: string; code?: OutboundErrorCode };

/** What bounds one POST: the time for the whole exchange, and how much of the answer is read (and what happens past it). */
export interface PostLimits {
  timeoutMs: number;
  maxBodyBytes: number;
  overflow: 'fail' | 'truncate';
}

/**
 * Where webhooks may point, and the one way requests go there (src/outbound: every address a name resolves
 * to is checked at each attempt, and the connection pinned to it). WEBHOOK_ALLOW_PRIVATE_TARGETS=false (the
 * default): https only, public addresses only; true: http and loopback/private/link-local addresses too.
 * Cloud metadata addresses are refused either way.
 */
@Injectable()
export class WebhookTargets implements OnApplicationShutdown {
  readonly policy: AddressPolicy;
  /** Connections kept open between deliveries to the same receiver, each only for the address it was opened to. */
  private readonly agents = new PinnedAgents();
  /** The system resolver when undefined. Tests replace it to make a name resolve where they want. */
  resolver: Resolver | undefined;

  constructor(@InjectConfig() private readonly config: AppConfig) {
    this.policy = { allowPrivateAddresses: config.webhooks.allowPrivateTargets };
  }

  private get httpsOnly(): boolean {
    return !this.config.webhooks.allowPrivateTargets;
  }

  /**
   * The URL as stored (WHATWG-normalised), or a 400 on `url`: not an absolute http(s) URL, http when https is
   * required, credentials, too long, or a host that is (or resolves to) an address the policy refuses. A name
   * that does not resolve now is accepted: it may exist by the time of delivery, which checks again.
   */
  async checkUrl(raw: string): Promise<string> {
    const refuse = (message: string) => new RequestValidationException([{ field: 'url', message: `url ${message}` }]);
    let url: URL;
    try {
      url = new URL(raw);
    } catch {
      throw refuse('must be an absolute URL');
    }
    const schemes = this.httpsOnly ? ['https:'] : ['https:', 'http:'];
    if (!schemes.includes(url.protocol)) throw refuse(this.httpsOnly ? 'must use https' : 'must use http or https');
    if (url.username || url.password) throw refuse('must not contain credentials');
    if (url.href.length > MAX_WEBHOOK_URL_LENGTH) {
      throw refuse(
        `must be at most ${MAX_WEBHOOK_URL_LENGTH} characters once normalised, non-ASCII characters percent-encoded (${url.href.length} here)`,
      );
    }
    const host = url.hostname.replace(/^\[(.*)\]$/, '$1');
    const addresses = isIP(host) ? [host] : await this.lookupQuietly(host);
    for (const address of addresses) {
      const reason = refusalReason(address, this.policy);
      if (reason) throw refuse(`must not point at ${reason}${isIP(host) ? '' : ` (${host} resolves to one)`}`);
    }
    return url.href;
  }

  /**
   * POSTs one signed request (a delivery, by default within WEBHOOK_TIMEOUT_MS keeping the answer's first KiB):
   * the status and the bytes of the answer read, or a short reason for no answer. A redirect is an answer, never followed.
   */
  async post(url: string, headers: Record<string, string>, body: string, limits?: PostLimits): Promise<AttemptResult> {
    const { timeoutMs, maxBodyBytes, overflow } = limits ?? {
      timeoutMs: this.config.webhooks.timeoutMs,
      maxBodyBytes: RESPONSE_BYTES_READ,
      overflow: 'truncate',
    };
    try {
      const response = await outboundRequest(url, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...headers },
        body,
        policy: this.policy,
        httpsOnly: this.httpsOnly,
        timeoutMs,
        maxBodyBytes,
        overflow,
        // A redirect is a failure (Standard Webhooks): the customer should fix the URL instead.
        maxRedirects: 0,
        resolver: this.resolver,
        agents: this.agents,
      });
      return { statusCode: response.status, body: response.body };
    } catch (error) {
      if (error instanceof OutboundError) return { error: error.message, code: error.code };
      throw error;
    }
  }

  /** At shutdown (an attempt still in flight then fails, and is retried by another instance). */
  onApplicationShutdown(): void {
    this.agents.destroy();
  }

  private async lookupQuietly(host: string): Promise<string[]> {
    const resolve = this.resolver ?? ((name: string) => dns.lookup(name, { all: true, verbatim: true }));
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>(
      (_resolve, reject) => (timer = setTimeout(() => reject(new Error('timeout')), SAVE_LOOKUP_TIMEOUT_MS)),
    );
    try {
      return (await Promise.race([resolve(host), timeout])).map(({ address }) => address);
    } catch {
      return [];
    } finally {
      clearTimeout(timer);
    }
  }
}

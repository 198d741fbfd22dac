import { Injectable, Logger, OnApplicationShutdown, OnModuleInit } from '@nestjs/common';
import { Client } from 'pg';
import { DataSource } from 'typeorm';
import { CallerAccount } from './caller-account';

/** `ApiKeysService.revoke` sends this in the revoking transaction; every server LISTENs to it. */
export const API_KEY_REVOKED_CHANNEL = 'api_key_revoked';

/** How long a verified key is trusted without asking the database again (revocation clears it at once). */
const TTL_MS = 10_000;
const MAX_ENTRIES = 10_000;
const RECONNECT_MS = 1_000;

/**
 * A short-lived cache of verified API keys (SHA-256 of the key → its account), so that a request does not
 * pay a database round trip for its key. Revocation still takes effect at once:
 * - `key:revoke` (CLI or not) sends `NOTIFY api_key_revoked` in the transaction that revokes, and this server
 *   LISTENs on a connection of its own: the notification arrives when the revocation commits and empties the cache;
 * - a lookup that was in flight when a revocation arrived is not cached (generation check);
 * - nothing is cached while the LISTEN connection is down (every request then asks the database), so a missed
 *   notification cannot leave a revoked key usable. Entries also expire after 10 s whatever happens.
 */
@Injectable()
export class VerifiedKeys implements OnModuleInit, OnApplicationShutdown {
  private readonly logger = new Logger(VerifiedKeys.name);
  private readonly entries = new Map<string, { account: CallerAccount; expiresAt: number }>();
  private generation = 0;
  private listener: Client | null = null;
  private listening = false;
  private stopped = false;
  private reconnectTimer: NodeJS.Timeout | undefined;
  /** A failure to listen was logged; the next is not, until listening works again. */
  private warned = false;

  constructor(private readonly dataSource: DataSource) {}

  /** The cached account of a key hash, if verified within the TTL and nothing was revoked since. */
  get(keyHash: string): CallerAccount | undefined {
    const entry = this.entries.get(keyHash);
    if (!entry) return undefined;
    if (entry.expiresAt > Date.now()) return entry.account;
    this.entries.delete(keyHash);
    return undefined;
  }

  /** Call before the database lookup; pass the result to `remember` with the lookup's answer. */
  startLookup(): number {
    return this.generation;
  }

  /** Caches a verified key, unless a revocation arrived since the lookup started or no notification can arrive. */
  remember(lookup: number, keyHash: string, account: CallerAccount): void {
    if (!this.listening || lookup !== this.generation) return;
    if (this.entries.size >= MAX_ENTRIES) this.entries.clear();
    this.entries.set(keyHash, { account, expiresAt: Date.now() + TTL_MS });
  }

  /** Forgets every verified key (a key was revoked, or revocations can no longer be heard). */
  invalidate(): void {
    this.generation++;
    this.entries.clear();
  }

  async onModuleInit(): Promise<void> {
    await this.listen();
  }

  async onApplicationShutdown(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.reconnectTimer);
    this.listening = false;
    await this.listener?.end().catch(() => undefined);
  }

  private async listen(): Promise<void> {
    const { url, connectTimeoutMS } = this.dataSource.options as { url?: string; connectTimeoutMS?: number };
    const client = new Client({ connectionString: url, connectionTimeoutMillis: connectTimeoutMS, application_name: 'voice-agent-api-listen' });
    client.on('notification', () => this.invalidate());
    client.on('error', () => this.lost(client));
    client.on('end', () => this.lost(client));
    this.listener = client;
    try {
      await client.connect();
      await client.query(`LISTEN ${API_KEY_REVOKED_CHANNEL}`);
      if (this.stopped || this.listener !== client) return;
      this.invalidate(); // anything revoked while not listening
      this.listening = true;
      this.warned = false;
    } catch (error) {
      if (!this.warned) this.logger.warn(`Cannot listen for API key revocations (${(error as Error).message}); keys are checked on every request until it can`);
      this.warned = true;
      this.lost(client);
    }
  }

  private lost(client: Client): void {
    if (this.listener !== client) return;
    this.listening = false;
    this.listener = null;
    this.invalidate();
    client.end().catch(() => undefined);
    if (!this.stopped) this.reconnectTimer = setTimeout(() => void this.listen(), RECONNECT_MS).unref();
  }
}

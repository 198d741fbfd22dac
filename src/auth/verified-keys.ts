import { Injectable, Logger, OnApplicationShutdown, OnModuleInit } from '@nestjs/common';
import { Client, QueryConfig } from 'pg';
import { DataSource } from 'typeorm';
import { apiKeyPrefix } from './api-key-token';
import { ApiKeysRepository } from './auth.repository';
import { CallerAccount } from './caller-account';

/**
 * A trigger on api_keys sends this when a key is revoked or deleted, or its expiry or scopes change, however
 * (migrations ApiKeysNotifyRevocation, ApiKeysThroughTheApi); every server LISTENs to it.
 */
export const API_KEY_REVOKED_CHANNEL = 'api_key_revoked';
/** A trigger on api_keys sends this, with the key's prefix, when a key is made (migration ApiKeysNotifyCreation). */
export const API_KEY_CREATED_CHANNEL = 'api_key_created';

/** How long a verified key is trusted without asking the database again (revocation clears it at once). */
const TTL_MS = 10_000;
const MAX_ENTRIES = 10_000;
const RECONNECT_MS = 1_000;
/** The listening connection is checked this often (`SELECT 1` on it), and given this long to answer. */
const HEARTBEAT_MS = 2_000;
const HEARTBEAT_TIMEOUT_MS = 1_000;
/**
 * Past this since the listener last proved alive, the cache is not trusted (a heartbeat is overdue: unsure). It
 * leaves a heartbeat 2 s of slack, so that a busy event loop does not turn the cache off.
 */
const TRUST_MS = 2 * HEARTBEAT_MS + HEARTBEAT_TIMEOUT_MS;
/** TCP keepalive on the listening socket, for the kernel to notice a peer that vanished. */
const KEEPALIVE_MS = 5_000;

/**
 * What this server knows of the API keys without asking the database: a short-lived cache of verified keys, and
 * the prefixes of the keys that exist.
 *
 * The cache of verified keys: a short-lived cache (SHA-256 of the key → its account), so that a request does not
 * pay a database round trip for its key. Revocation still takes effect at once:
 * - revoking or deleting a key (the CLI, the API, or an operator's SQL) fires a trigger that sends
 *   `NOTIFY api_key_revoked` in the same transaction, and this server LISTENs on a connection of its own: the
 *   notification arrives when the revocation commits and empties the cache;
 * - a lookup that was in flight when a revocation arrived is not cached (generation check);
 * - nothing is cached while the LISTEN connection is down, or not known to be up: it is checked every 2 s with
 *   a `SELECT 1` that must answer within 1 s (and has TCP keepalive), so a connection killed or silently cut is
 *   noticed within about 3 s, and the cache is not trusted once a check is overdue. Entries also expire after
 *   10 s whatever happens, and at the key's own expiry if that comes first.
 *
 * The prefixes (the key's first 12 characters, 48 bits of its secret) of every key made: loaded when listening
 * starts (after LISTEN, so nothing made in between is missed), and each key made since arrives on
 * `NOTIFY api_key_created`, from any server, the CLI and an operator's SQL included. An address blocked for its bad
 * keys still has a key with a known prefix looked up (one indexed lookup), so that one client's guesses never lock
 * a valid key out of a shared address; a guess has one chance in 2^48 per key of a known prefix, so guessing from a
 * blocked address still costs no database work. A key revoked or expired while the server runs keeps its prefix
 * here (its request costs its one lookup); a server starting loads only the active keys' prefixes. While listening is down, keys made elsewhere are not heard of:
 * they are refused from a blocked address, as every key was before.
 */
@Injectable()
export class VerifiedKeys implements OnModuleInit, OnApplicationShutdown {
  private readonly logger = new Logger(VerifiedKeys.name);
  private readonly entries = new Map<string, { account: CallerAccount; expiresAt: number }>();
  private readonly prefixes = new Set<string>();
  private generation = 0;
  private listener: Client | null = null;
  private listening = false;
  /** When the listening connection last proved alive (connected, or answered a heartbeat). */
  private confirmedAt = 0;
  private stopped = false;
  private reconnectTimer: NodeJS.Timeout | undefined;
  private heartbeatTimer: NodeJS.Timeout | undefined;
  /** A failure to listen was logged; the next is not, until listening works again. */
  private warned = false;

  constructor(
    private readonly dataSource: DataSource,
    private readonly keys: ApiKeysRepository,
  ) {}

  /** Whether a key with this key's prefix was made (false: the key is certainly not valid). */
  mayExist(apiKey: string): boolean {
    return this.prefixes.has(apiKeyPrefix(apiKey));
  }

  /** A key made by this server: known at once, before its notification arrives. */
  rememberPrefix(prefix: string): void {
    this.prefixes.add(prefix);
  }

  /**
   * The cached account of a key hash, if verified within the TTL and before the key's expiry, nothing was revoked
   * since and revocations can be heard.
   */
  get(keyHash: string): CallerAccount | undefined {
    const entry = this.entries.get(keyHash);
    if (!entry) return undefined;
    if (!this.trusted()) {
      this.invalidate();
      return undefined;
    }
    if (entry.expiresAt > Date.now()) return entry.account;
    this.entries.delete(keyHash);
    return undefined;
  }

  /** Call before the database lookup; pass the result to `remember` with the lookup's answer. */
  startLookup(): number {
    return this.generation;
  }

  /**
   * Caches a verified key, unless a revocation arrived since the lookup started or no notification can arrive.
   * @param keyExpiresAt the key's own expiry: the entry never outlives it
   */
  remember(lookup: number, keyHash: string, account: CallerAccount, keyExpiresAt: Date | null = null): void {
    if (!this.trusted() || lookup !== this.generation) return;
    if (this.entries.size >= MAX_ENTRIES) this.entries.clear();
    const expiresAt = Math.min(Date.now() + TTL_MS, keyExpiresAt?.getTime() ?? Infinity);
    this.entries.set(keyHash, { account, expiresAt });
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
    clearTimeout(this.heartbeatTimer);
    this.listening = false;
    await this.listener?.end().catch(() => undefined);
  }

  /** Listening, and known to be a moment ago. */
  private trusted(): boolean {
    return this.listening && Date.now() - this.confirmedAt <= TRUST_MS;
  }

  private async listen(): Promise<void> {
    const { url, connectTimeoutMS } = this.dataSource.options as { url?: string; connectTimeoutMS?: number };
    const client = new Client({
      connectionString: url,
      connectionTimeoutMillis: connectTimeoutMS,
      application_name: 'voice-agent-api-listen',
      keepAlive: true,
      keepAliveInitialDelayMillis: KEEPALIVE_MS,
    });
    client.on('notification', ({ channel, payload }) => {
      if (channel === API_KEY_CREATED_CHANNEL) {
        if (payload) this.prefixes.add(payload);
      } else this.invalidate();
    });
    client.on('error', () => this.lost(client));
    client.on('end', () => this.lost(client));
    this.listener = client;
    try {
      await client.connect();
      await client.query(`LISTEN ${API_KEY_REVOKED_CHANNEL}; LISTEN ${API_KEY_CREATED_CHANNEL}`);
      const prefixes = await this.keys.listPrefixes();
      if (this.stopped || this.listener !== client) return;
      for (const prefix of prefixes) this.prefixes.add(prefix);
      this.invalidate(); // anything revoked while not listening
      this.listening = true;
      this.confirmedAt = Date.now();
      this.warned = false;
      this.heartbeat(client);
    } catch (error) {
      if (!this.warned)
        this.logger.warn(
          `Cannot listen for API key revocations (${(error as Error).message}); keys are checked on every request until it can`,
        );
      this.warned = true;
      this.lost(client);
    }
  }

  /** Every HEARTBEAT_MS, a `SELECT 1` on the listening connection: no answer within HEARTBEAT_TIMEOUT_MS, it is lost. */
  private heartbeat(client: Client): void {
    this.heartbeatTimer = setTimeout(() => void this.beat(client), HEARTBEAT_MS).unref();
  }

  /** One heartbeat: the next one scheduled once it is answered, the connection lost if it is not (never rejects). */
  private async beat(client: Client): Promise<void> {
    try {
      // pg takes a per-query `query_timeout` (client.js), which its types do not list.
      await client.query({ text: 'SELECT 1', query_timeout: HEARTBEAT_TIMEOUT_MS } as QueryConfig);
      if (this.listener !== client) return;
      this.confirmedAt = Date.now();
      this.heartbeat(client);
    } catch {
      this.lost(client);
    }
  }

  private lost(client: Client): void {
    if (this.listener !== client) return;
    this.listening = false;
    this.listener = null;
    clearTimeout(this.heartbeatTimer);
    this.invalidate();
    client.end().catch(() => undefined); // a query hanging on a dead socket makes this destroy the socket
    if (!this.stopped) this.reconnectTimer = setTimeout(() => void this.listen(), RECONNECT_MS).unref();
  }
}

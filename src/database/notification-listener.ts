import { Client } from 'pg';

const RECONNECT_MS = 1_000;
const KEEPALIVE_MS = 5_000;

/**
 * A connection of its own that LISTENs on one channel of PostgreSQL's NOTIFY and hands each notification's payload
 * to `heard`; it reconnects a second after it is lost (what is sent meanwhile is missed: a user of it has another
 * way of learning the same thing, later). Started on `start`, closed on `stop`.
 */
export class NotificationListener {
  private client: Client | null = null;
  private stopped = false;
  private started = false;
  private reconnectTimer: NodeJS.Timeout | undefined;

  constructor(
    private readonly databaseUrl: string,
    private readonly channel: string,
    private readonly heard: (payload: string) => void,
    private readonly failed: (error: unknown) => void,
  ) {
    if (!/^[a-z_]+$/.test(channel)) throw new Error('A channel is a plain identifier');
  }

  /** Starts listening (once; later calls do nothing). */
  start(): void {
    if (this.started || this.stopped) return;
    this.started = true;
    void this.listen();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.reconnectTimer);
    const client = this.client;
    this.client = null;
    await client?.end().catch(() => undefined);
  }

  private async listen(): Promise<void> {
    if (this.stopped) return;
    const client = new Client({
      connectionString: this.databaseUrl,
      application_name: `voice-agent-api-${this.channel.replace(/_/g, '-')}`,
      keepAlive: true,
      keepAliveInitialDelayMillis: KEEPALIVE_MS,
    });
    const lost = () => {
      if (this.client !== client) return;
      this.client = null;
      client.end().catch(() => undefined);
      if (!this.stopped) this.reconnectTimer = setTimeout(() => void this.listen(), RECONNECT_MS).unref();
    };
    client.on('notification', ({ payload }) => this.heard(payload ?? ''));
    client.on('error', lost);
    client.on('end', lost);
    this.client = client;
    try {
      await client.connect();
      await client.query(`LISTEN ${this.channel}`);
    } catch (error) {
      this.failed(error);
      lost();
    }
  }
}

import { Injectable, OnModuleInit } from '@nestjs/common';
import { AppConfig } from '../config/config';
import { InjectConfig } from '../config/config.module';
import { Jobs } from '../jobs/jobs.service';
import { WebhooksRepository } from './webhooks.repository';

const PRUNE_JOB = 'webhooks.prune-events';
const PRUNE_BATCH = 1_000;

/**
 * Retention of the deliveries log: every hour (a cron job, on one instance at a time), events created more
 * than WEBHOOK_RETENTION_DAYS ago are deleted with their deliveries, unless one of those is still pending (it
 * goes once it has succeeded or failed). Events carry a copy of the call, transcript included: they are not
 * kept for ever.
 */
@Injectable()
export class WebhookRetention implements OnModuleInit {
  constructor(
    private readonly webhooks: WebhooksRepository,
    private readonly jobs: Jobs,
    @InjectConfig() private readonly config: AppConfig,
  ) {}

  onModuleInit(): void {
    this.jobs.define({
      name: PRUNE_JOB,
      cron: '17 * * * *',
      expireInSeconds: 600,
      retryLimit: 0, // the next tick is the retry
      handler: async () => {
        await this.prune();
      },
    });
  }

  /** Deletes every expired event, in batches; how many. */
  async prune(): Promise<number> {
    let total = 0;
    let deleted: number;
    do {
      deleted = await this.webhooks.deleteExpiredEvents(this.config.webhooks.retentionDays, PRUNE_BATCH);
      total += deleted;
    } while (deleted === PRUNE_BATCH);
    return total;
  }
}

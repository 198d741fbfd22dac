import { Inject, Injectable, Logger, OnModuleInit } from '@nestjs/common';
import { AgentsService } from '../agents/agents.service';
import { CallsService } from '../calls/calls.service';
import { AppConfig } from '../config/config';
import { InjectConfig } from '../config/config.module';
import { TransactionSql } from '../database/database';
import { Jobs } from '../jobs/jobs.service';
import { CallAnalyser } from './answering/call-analyser';
import { logProviderFailure } from './answering/failure-log';
import { ConversationRef, JOB_ANALYSE } from './conversation-jobs';

/**
 * The post-call analysis of a conversation's call (with a provider only): a durable job, queued in the
 * transaction that records the call, fills in its sentiment, status and summary from one more provider request.
 */
@Injectable()
export class ConversationAnalysis implements OnModuleInit {
  private readonly logger = new Logger('Conversations');

  constructor(
    private readonly calls: CallsService,
    private readonly agents: AgentsService,
    private readonly jobs: Jobs,
    @Inject(CallAnalyser) private readonly analyser: CallAnalyser | null,
    @InjectConfig() private readonly config: AppConfig,
  ) {}

  onModuleInit(): void {
    this.jobs.define<ConversationRef>({
      name: JOB_ANALYSE,
      handler: ({ accountId, conversationId }) => this.analyse(accountId, conversationId),
      concurrency: 2,
      retryLimit: 2,
      retryDelay: 30,
      retryBackoff: true,
      expireInSeconds: Math.ceil(this.config.llm.timeoutMs / 1000) + 60,
    });
  }

  /** Queues the analysis of the conversation's call in `sql`'s transaction; nothing without a provider. */
  async queue(accountId: number, conversationId: string, sql: TransactionSql): Promise<void> {
    if (this.analyser) await this.jobs.send<ConversationRef>(JOB_ANALYSE, { accountId, conversationId }, { sql });
  }

  /** Fills the call's sentiment, status and summary from one more provider request; a failure retries, an invalid answer keeps the defaults. */
  private async analyse(accountId: number, callId: string): Promise<void> {
    const call = this.analyser && (await this.calls.find(accountId, callId));
    const agent = call && call.agentId !== null ? await this.agents.find(accountId, call.agentId) : undefined;
    if (!call || !agent) return;
    let analysis;
    try {
      analysis = await this.analyser.analyse(agent.model, call.transcript);
    } catch (error) {
      logProviderFailure(this.logger, error, 'The call analysis failed; it will be retried');
      // eslint-disable-next-line preserve-caught-error -- the provider's error is not passed on (it may quote the transcript)
      throw new Error('The call analysis failed; it is retried');
    }
    if (!analysis) {
      this.logger.warn("The provider's call analysis was not valid; the call keeps its defaults");
      return;
    }
    await this.calls.updateAnalysis(accountId, callId, analysis);
  }
}

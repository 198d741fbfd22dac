import { Module } from '@nestjs/common';
import type OpenAI from 'openai';
import { AgentsModule } from '../agents/agents.module';
import { AgentVersionsModule } from '../agent-versions/agent-versions.module';
import { CallsModule } from '../calls/calls.module';
import { KnowledgeBasesModule } from '../knowledge-bases/knowledge-bases.module';
import { AppConfig } from '../config/config';
import { APP_CONFIG } from '../config/config.module';
import { ToolsModule } from '../tools/tools.module';
import { WidgetSitesModule } from '../widget-sites/widget-sites.module';
import { Answerer } from './answering/answerer';
import { BuiltInAnswerer } from './answering/builtin-answerer';
import { CallAnalyser } from './answering/call-analyser';
import { CHAT_CLIENT, createChatClient } from './answering/chat-client';
import { ChatCompletionsAnswerer } from './answering/chat-completions-answerer';
import { KnowledgePassageFinder, PassageFinder } from './answering/passages';
import { ProviderHttp } from './answering/provider-http';
import { AgentConversationsController } from './agent-conversations.controller';
import { ConversationAnalysis } from './conversation-analysis.service';
import { ConversationCalls } from './conversation-calls.service';
import { ConversationEnds } from './conversation-ends.service';
import { ConversationLimits } from './conversation-limits';
import { ConversationReplies } from './conversation-replies.service';
import { ConversationStarts } from './conversation-starts.service';
import { ConversationTalk } from './conversation-talk.service';
import { ConversationsController } from './conversations.controller';
import { ConversationsRepository } from './conversations.repository';
import { WidgetSessionsController } from './widget-sessions.controller';

/** Who answers: the configured Chat Completions provider (LLM_BASE_URL), else the built-in answerer. */
const answeringProviders = [
  { provide: ProviderHttp, useFactory: () => new ProviderHttp() },
  {
    provide: CHAT_CLIENT,
    inject: [APP_CONFIG, ProviderHttp],
    useFactory: (config: AppConfig, http: ProviderHttp) => (config.llm.baseUrl ? createChatClient(config.llm, http.fetch) : null),
  },
  {
    provide: Answerer,
    inject: [CHAT_CLIENT, APP_CONFIG],
    useFactory: (client: OpenAI | null, config: AppConfig) =>
      client ? new ChatCompletionsAnswerer(client, config) : new BuiltInAnswerer(),
  },
  {
    // Post-call analysis only with a provider; null without one.
    provide: CallAnalyser,
    inject: [CHAT_CLIENT, APP_CONFIG],
    useFactory: (client: OpenAI | null, config: AppConfig) => (client ? new CallAnalyser(client, config) : null),
  },
  { provide: PassageFinder, useClass: KnowledgePassageFinder },
];

@Module({
  imports: [AgentsModule, AgentVersionsModule, CallsModule, KnowledgeBasesModule, ToolsModule, WidgetSitesModule],
  controllers: [AgentConversationsController, WidgetSessionsController, ConversationsController],
  providers: [
    ConversationStarts,
    ConversationTalk,
    ConversationReplies,
    ConversationEnds,
    ConversationCalls,
    ConversationAnalysis,
    ConversationsRepository,
    ConversationLimits,
    ...answeringProviders,
  ],
  // The voice socket (src/voice) takes the same turns through the same path as a message; phone calls
  // (src/telephony) start and end their conversations here.
  exports: [ConversationTalk, ConversationReplies, ConversationEnds, ConversationCalls, ConversationStarts, ProviderHttp],
})
export class ConversationsModule {}

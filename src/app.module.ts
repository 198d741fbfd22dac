import { DynamicModule, MiddlewareConsumer, Module, NestModule, RequestMethod } from '@nestjs/common';
import { APP_FILTER, APP_PIPE } from '@nestjs/core';
import { TypeOrmModule } from '@nestjs/typeorm';
import { AgentsModule } from './agents/agents.module';
import { AgentVersionsModule } from './agent-versions/agent-versions.module';
import { AuthModule } from './auth/auth.module';
import { ScopeModule } from './auth/scope.guard';
import { AllExceptionsFilter } from './common/all-exceptions.filter';
import { JsonBodyMiddleware, JsonBodyModule } from './common/json-body.middleware';
import { ResponseMappingModule } from './common/responds';
import { createValidationPipe } from './common/validation';
import { AppConfig } from './config/config';
import { ConfigModule } from './config/config.module';
import { dataSourceOptions } from './database/data-source-options';
import { DatabaseModule } from './database/database.module';
import { HealthModule } from './health/health.module';
import { IdempotencyModule } from './idempotency/idempotency.module';
import { JobsModule } from './jobs/jobs.module';
import { RateLimitModule } from './rate-limit/rate-limit.module';
import { WidgetSitesModule } from './widget-sites/widget-sites.module';
import { KnowledgeBasesModule } from './knowledge-bases/knowledge-bases.module';
import { CallsModule } from './calls/calls.module';
import { RecordingsModule } from './recordings/recordings.module';
import { ConversationsModule } from './conversations/conversations.module';
import { UsageModule } from './usage/usage.module';
import { ToolsModule } from './tools/tools.module';
import { WebhooksModule } from './webhooks/webhooks.module';
import { VoiceModule } from './voice/voice.module';
import { TelephonyModule } from './telephony/telephony.module';

/**
 * The domain modules, each with its controller, service and entities. Express tries a request against the routes
 * in the order they were registered, about a microsecond each: the module of the most frequent reads, the calls,
 * comes first (docs/benchmarks.md, "The read path (issue 41)").
 */
const DOMAIN_MODULES = [
  CallsModule,
  HealthModule,
  AgentsModule,
  AgentVersionsModule,
  KnowledgeBasesModule,
  RecordingsModule,
  WidgetSitesModule,
  WebhooksModule,
  ToolsModule,
  UsageModule,
  ConversationsModule,
  VoiceModule,
  TelephonyModule,
];

/** The methods whose requests carry a body: other requests never go through the JSON middleware. */
const BODY_METHODS = [RequestMethod.POST, RequestMethod.PUT, RequestMethod.PATCH];

/** Routes whose bodies are not JSON (they read the raw request stream themselves): uploads, with their own time bound (JsonBodyGuard). */
const NON_JSON_ROUTES: { path: string; method: RequestMethod }[] = [{ path: 'calls/:callId/recording', method: RequestMethod.PUT }];

@Module({})
export class AppModule implements NestModule {
  /** @param databaseUrl the PostgreSQL to use (the configured one, or the embedded one main.ts started) */
  static forRoot(config: AppConfig, databaseUrl: string): DynamicModule {
    return {
      module: AppModule,
      imports: [
        ConfigModule.forRoot(config),
        TypeOrmModule.forRoot({ ...dataSourceOptions(databaseUrl, config), retryAttempts: 2, retryDelay: 1_000 }),
        DatabaseModule,
        JobsModule,
        // The global guards run in the order of these modules: the API key (401), the rate limit (429, and the
        // rate-limit headers from here on), the key's scope (403), the JSON body (413, 415, 400), the
        // Idempotency-Key of a POST, then the route's declared response (ResponseMapping: its mapper, or a 500).
        AuthModule,
        RateLimitModule,
        ScopeModule,
        JsonBodyModule,
        IdempotencyModule,
        ResponseMappingModule,
        ...DOMAIN_MODULES,
      ],
      providers: [
        { provide: APP_PIPE, useFactory: createValidationPipe },
        { provide: APP_FILTER, useClass: AllExceptionsFilter },
      ],
    };
  }

  configure(consumer: MiddlewareConsumer): void {
    consumer
      .apply(JsonBodyMiddleware)
      .exclude(...NON_JSON_ROUTES)
      .forRoutes(...BODY_METHODS.map((method) => ({ path: '*path', method })));
  }
}

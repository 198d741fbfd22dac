/**
 * A Nest server of one route, GET /agents answering ROWS (default 3) agents without a database, for
 * bench/interceptor-cost.ts: MODE=before (the handler maps, no interceptor), passthrough (an interceptor that
 * does nothing: what ResponseMapping cost when it was an interceptor, and more) or after (@Responds and
 * ResponseMapping, the guard, as the service runs).
 */
import { CallHandler, Controller, ExecutionContext, Get, Module, NestInterceptor } from '@nestjs/common';
import { APP_GUARD, APP_INTERCEPTOR, NestFactory } from '@nestjs/core';
import type { AgentRow } from '../src/agents/agents.repository';
import { AgentResponse, toAgentResponse } from '../src/agents/dto/agent-response.dto';
import { ApiExpressAdapter } from '../src/common/api-express-adapter';
import { Responds, ResponseMapping } from '../src/common/responds';
import { APP_CONFIG } from '../src/config/config.module';

const mode = process.env.MODE ?? 'after';
const ROWS: AgentRow[] = Array.from({ length: Number(process.env.ROWS ?? 3) }, (_, index) => ({
  id: index + 1,
  name: `Agent ${index}`,
  description: 'Answers the front desk line after hours',
  model: 'gpt-4.1',
  voice: 'shubh',
  language: 'hi-IN',
  systemPrompt: '',
  knowledgeBaseIds: [3, 7],
  toolIds: [],
  publishedVersion: null,
  createdAt: new Date(),
  updatedAt: new Date(),
}));

class PassThrough implements NestInterceptor {
  intercept(_context: ExecutionContext, next: CallHandler) {
    return next.handle();
  }
}

@Controller('agents')
class MappingHandler {
  @Get()
  async list(): Promise<AgentResponse[]> {
    return (await Promise.resolve(ROWS)).map(toAgentResponse);
  }
}

@Controller('agents')
class MappedByResponseMapping {
  @Get()
  @Responds([AgentResponse], toAgentResponse)
  list(): Promise<AgentRow[]> {
    return Promise.resolve(ROWS);
  }
}

const interceptor = {
  before: [],
  passthrough: [{ provide: APP_INTERCEPTOR, useClass: PassThrough }],
  after: [{ provide: APP_GUARD, useClass: ResponseMapping }],
}[mode]!;

@Module({
  controllers: [mode === 'after' ? MappedByResponseMapping : MappingHandler],
  providers: [{ provide: APP_CONFIG, useValue: { publicBaseUrl: 'http://localhost' } }, ...interceptor],
})
class BenchModule {}

void (async () => {
  const app = await NestFactory.create(BenchModule, new ApiExpressAdapter(), { logger: false });
  await app.listen(0, '127.0.0.1');
  let last = process.cpuUsage();
  process.on('message', (message) => {
    if (message !== 'cpu') return;
    const used = process.cpuUsage(last);
    last = process.cpuUsage();
    process.send!({ cpuMicros: used.user + used.system });
  });
  process.send!({ port: (app.getHttpServer().address() as { port: number }).port });
})();

import { Controller, Get, ServiceUnavailableException } from '@nestjs/common';
import { ApiOperation, ApiServiceUnavailableResponse, ApiTags } from '@nestjs/swagger';
import { HealthCheckService, TypeOrmHealthIndicator } from '@nestjs/terminus';
import { Public } from '../auth/public.decorator';
import { ErrorResponse } from '../common/error-response.dto';
import { Responds } from '../common/responds';
import { VoiceCapacity } from '../voice/voice-capacity';
import { HealthResponse, HealthState, LivenessResponse, toHealthResponse, toLivenessResponse } from './health-response.dto';

const PING_TIMEOUT_MS = 1_500;

/**
 * `/health/live` for a liveness probe (restart the process only when it no longer answers), `/health/ready`
 * for a readiness probe or a load balancer (send it traffic only while its database answers; its `voice` says how
 * many spoken calls it serves of how many it may), and `/health`, the same as ready, for those who check one address.
 */
@ApiTags('health')
@Public()
@Controller('health')
export class HealthController {
  constructor(
    private readonly health: HealthCheckService,
    private readonly database: TypeOrmHealthIndicator,
    private readonly voice: VoiceCapacity,
  ) {}

  /** 200 while the database answers, 503 when it does not; with the instance's spoken calls. */
  @Get()
  @ApiOperation({ summary: 'Service health (the same as /health/ready)' })
  @Responds(HealthResponse, toHealthResponse)
  @ApiServiceUnavailableResponse({ description: 'The database is unreachable', type: ErrorResponse })
  check(): Promise<HealthState> {
    return this.ready();
  }

  /** 200 whenever the process answers HTTP; asks nothing of the database (a database outage must not restart every instance). */
  @Get('live')
  @ApiOperation({ summary: 'Liveness: the process answers' })
  @Responds(LivenessResponse, toLivenessResponse)
  live(): void {}

  /** 200 while the database answers, 503 when it does not; with the instance's spoken calls. */
  @Get('ready')
  @ApiOperation({ summary: 'Readiness: the database answers' })
  @Responds(HealthResponse, toHealthResponse)
  @ApiServiceUnavailableResponse({ description: 'The database is unreachable', type: ErrorResponse })
  async ready(): Promise<HealthState> {
    try {
      await this.health.check([() => this.database.pingCheck('database').withTimeout(PING_TIMEOUT_MS)]);
    } catch {
      throw new ServiceUnavailableException('The database is unreachable');
    }
    return { database: 'up', voice: this.voice.load() };
  }
}

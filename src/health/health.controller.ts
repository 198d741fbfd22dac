import { Controller, Get, ServiceUnavailableException } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiServiceUnavailableResponse, ApiTags } from '@nestjs/swagger';
import { HealthCheckService, TypeOrmHealthIndicator } from '@nestjs/terminus';
import { Public } from '../auth/public.decorator';
import { ErrorResponse } from '../common/error-response.dto';
import { HealthResponse } from './health-response.dto';

const PING_TIMEOUT_MS = 1_500;

@ApiTags('health')
@Public()
@Controller('health')
export class HealthController {
  constructor(
    private readonly health: HealthCheckService,
    private readonly database: TypeOrmHealthIndicator,
  ) {}

  /** Liveness and readiness: 200 while the database answers, 503 when it does not. */
  @Get()
  @ApiOperation({ summary: 'Service health' })
  @ApiOkResponse({ type: HealthResponse })
  @ApiServiceUnavailableResponse({ description: 'The database is unreachable', type: ErrorResponse })
  async check(): Promise<HealthResponse> {
    try {
      await this.health.check([() => this.database.pingCheck('database').withTimeout(PING_TIMEOUT_MS)]);
    } catch {
      throw new ServiceUnavailableException('The database is unreachable');
    }
    return { status: 'ok', database: 'up' };
  }
}

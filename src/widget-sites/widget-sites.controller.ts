import { Body, Controller, Delete, Get, HttpCode, Patch, Post } from '@nestjs/common';
import { ApiCreatedResponse, ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { CallerAccount } from '../auth/caller-account';
import { CurrentAccount } from '../auth/current-account.decorator';
import { ApiErrors, NoContent } from '../common/api-errors.decorator';
import { IntIdParam } from '../common/id.pipes';
import { ApiNoBody, refuseBodyFields } from '../common/no-body';
import { AppConfig } from '../config/config';
import { InjectConfig } from '../config/config.module';
import { CreateWidgetSiteDto } from './dto/create-widget-site.dto';
import { UpdateWidgetSiteDto } from './dto/update-widget-site.dto';
import { toWidgetSiteResponse, WidgetSiteResponse } from './dto/widget-site-response.dto';
import { WidgetSiteRow } from './widget-sites.repository';
import { WidgetSitesService } from './widget-sites.service';

const SiteId = () => IntIdParam('siteId', 'Widget site');
const AGENT_400 = [400, 'Invalid or unknown field (a `siteKey` too), or `agentId` not an agent of this account (with `details`)'] as [
  number,
  string,
];

/** The account's widget sites. Each response is mapped from its row with the configured PUBLIC_BASE_URL (the embed snippet's). */
@ApiTags('widget sites')
@Controller('widget/sites')
export class WidgetSitesController {
  constructor(
    private readonly sites: WidgetSitesService,
    @InjectConfig() private readonly config: AppConfig,
  ) {}

  @Get()
  @ApiOperation({ summary: "List the account's widget sites, by id, each with its siteKey and embed snippet" })
  @ApiOkResponse({ type: WidgetSiteResponse, isArray: true })
  async list(@CurrentAccount() account: CallerAccount): Promise<WidgetSiteResponse[]> {
    return (await this.sites.list(account.id)).map((site) => this.toResponse(site));
  }

  @Post()
  @ApiOperation({ summary: 'Add the widget to a website: name required, every setting defaulted, siteKey generated' })
  @ApiCreatedResponse({ type: WidgetSiteResponse })
  @ApiErrors(AGENT_400, 413, 415)
  async create(@CurrentAccount() account: CallerAccount, @Body() dto: CreateWidgetSiteDto): Promise<WidgetSiteResponse> {
    return this.toResponse(await this.sites.create(account.id, dto));
  }

  @Get(':siteId')
  @ApiOperation({ summary: 'Get one widget site' })
  @ApiOkResponse({ type: WidgetSiteResponse })
  @ApiErrors(404)
  async get(@CurrentAccount() account: CallerAccount, @SiteId() siteId: number): Promise<WidgetSiteResponse> {
    return this.toResponse(await this.sites.get(account.id, siteId));
  }

  @Patch(':siteId')
  @ApiOperation({ summary: "Change some of a widget site's settings (`agentId: null` detaches its agent)" })
  @ApiOkResponse({ type: WidgetSiteResponse })
  @ApiErrors(AGENT_400, 404, 413, 415)
  async update(
    @CurrentAccount() account: CallerAccount,
    @SiteId() siteId: number,
    @Body() dto: UpdateWidgetSiteDto,
  ): Promise<WidgetSiteResponse> {
    return this.toResponse(await this.sites.update(account.id, siteId, dto));
  }

  @Delete(':siteId')
  @NoContent()
  @ApiOperation({ summary: 'Delete a widget site; its snippet stops working at once' })
  @ApiErrors(404)
  async remove(@CurrentAccount() account: CallerAccount, @SiteId() siteId: number): Promise<void> {
    await this.sites.remove(account.id, siteId);
  }

  @Post(':siteId/rotate-key')
  @HttpCode(200)
  @ApiOperation({ summary: 'Replace the site key (the old one stops working at once); paste the new embedSnippet' })
  @ApiOkResponse({ type: WidgetSiteResponse })
  @ApiErrors(404)
  @ApiNoBody()
  async rotateKey(@CurrentAccount() account: CallerAccount, @SiteId() siteId: number, @Body() body: unknown): Promise<WidgetSiteResponse> {
    refuseBodyFields(body);
    return this.toResponse(await this.sites.rotateKey(account.id, siteId));
  }

  private toResponse(site: WidgetSiteRow): WidgetSiteResponse {
    return toWidgetSiteResponse(site, this.config.publicBaseUrl);
  }
}

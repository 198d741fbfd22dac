import { Body, Controller, Delete, Get, Patch, Post } from '@nestjs/common';
import { ApiOperation, ApiTags } from '@nestjs/swagger';
import { CallerAccount } from '../auth/caller-account';
import { CurrentAccount } from '../auth/current-account.decorator';
import { ApiErrors, NoContent } from '../common/api-errors.decorator';
import { IntIdParam } from '../common/id.pipes';
import { ApiNoBody, refuseBodyFields } from '../common/no-body';
import { Responds } from '../common/responds';
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

/** The account's widget sites. Each response is mapped from its row with the configured PUBLIC_BASE_URL (the embed snippet's: ResponseContext). */
@ApiTags('widget sites')
@Controller('widget/sites')
export class WidgetSitesController {
  constructor(private readonly sites: WidgetSitesService) {}

  @Get()
  @ApiOperation({ summary: "List the account's widget sites, by id, each with its siteKey and embed snippet" })
  @Responds([WidgetSiteResponse], toWidgetSiteResponse)
  list(@CurrentAccount() account: CallerAccount): Promise<WidgetSiteRow[]> {
    return this.sites.list(account.id);
  }

  @Post()
  @ApiOperation({ summary: 'Add the widget to a website: name required, every setting defaulted, siteKey generated' })
  @Responds(WidgetSiteResponse, toWidgetSiteResponse, { status: 201 })
  @ApiErrors(AGENT_400, 413, 415)
  create(@CurrentAccount() account: CallerAccount, @Body() dto: CreateWidgetSiteDto): Promise<WidgetSiteRow> {
    return this.sites.create(account.id, dto);
  }

  @Get(':siteId')
  @ApiOperation({ summary: 'Get one widget site' })
  @Responds(WidgetSiteResponse, toWidgetSiteResponse)
  @ApiErrors(404)
  get(@CurrentAccount() account: CallerAccount, @SiteId() siteId: number): Promise<WidgetSiteRow> {
    return this.sites.get(account.id, siteId);
  }

  @Patch(':siteId')
  @ApiOperation({ summary: "Change some of a widget site's settings (`agentId: null` detaches its agent)" })
  @Responds(WidgetSiteResponse, toWidgetSiteResponse)
  @ApiErrors(AGENT_400, 404, 413, 415)
  update(@CurrentAccount() account: CallerAccount, @SiteId() siteId: number, @Body() dto: UpdateWidgetSiteDto): Promise<WidgetSiteRow> {
    return this.sites.update(account.id, siteId, dto);
  }

  @Delete(':siteId')
  @NoContent()
  @ApiOperation({ summary: 'Delete a widget site; its snippet stops working at once' })
  @ApiErrors(404)
  async remove(@CurrentAccount() account: CallerAccount, @SiteId() siteId: number): Promise<void> {
    await this.sites.remove(account.id, siteId);
  }

  @Post(':siteId/rotate-key')
  @ApiOperation({ summary: 'Replace the site key (the old one stops working at once); paste the new embedSnippet' })
  @Responds(WidgetSiteResponse, toWidgetSiteResponse)
  @ApiErrors(404)
  @ApiNoBody()
  async rotateKey(@CurrentAccount() account: CallerAccount, @SiteId() siteId: number, @Body() body: unknown): Promise<WidgetSiteRow> {
    refuseBodyFields(body);
    return this.sites.rotateKey(account.id, siteId);
  }
}

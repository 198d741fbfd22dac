import { Injectable, NotFoundException } from '@nestjs/common';
import { AgentVersionsService } from '../agent-versions/agent-versions.service';
import { AgentsService, unknownAgentField } from '../agents/agents.service';
import { definedFields } from '../common/defined-fields';
import { CreateWidgetSiteDto } from './dto/create-widget-site.dto';
import { UpdateWidgetSiteDto } from './dto/update-widget-site.dto';
import { generateSiteKey, isSiteKeyShaped } from './site-key';
import { WidgetConfigRow, WidgetSessionSiteRow, WidgetSiteFields, WidgetSiteRow, WidgetSitesRepository } from './widget-sites.repository';

const FOREIGN_KEY_VIOLATION = '23503';

const notFound = (id: number) => new NotFoundException(`Widget site ${id} not found`);

/** The widget sites' rules (the agent must be the account's, 404s); the SQL is WidgetSitesRepository's. */
@Injectable()
export class WidgetSitesService {
  constructor(
    private readonly sites: WidgetSitesRepository,
    private readonly agents: AgentsService,
    private readonly versions: AgentVersionsService,
  ) {}

  list(accountId: number): Promise<WidgetSiteRow[]> {
    return this.sites.list(accountId);
  }

  async get(accountId: number, id: number): Promise<WidgetSiteRow> {
    return (await this.sites.get(accountId, id)) ?? Promise.reject(notFound(id));
  }

  async create(accountId: number, dto: CreateWidgetSiteDto): Promise<WidgetSiteRow> {
    if (dto.agentId != null) await this.agents.getReferenced(accountId, dto.agentId); // a site is answered only by its account's agent
    const agentVersion = (await this.versions.pin(accountId, dto.agentId ?? null, dto.agentVersion, false)) ?? null;
    const fields = { ...dto, agentVersion } as WidgetSiteFields;
    return this.whileAgentExists(dto.agentId, () => this.sites.insert(accountId, fields, generateSiteKey()));
  }

  async update(accountId: number, id: number, dto: UpdateWidgetSiteDto): Promise<WidgetSiteRow> {
    const fields = definedFields(dto);
    if (Object.keys(fields).length === 0) return this.get(accountId, id);
    if (fields.agentId != null || fields.agentVersion !== undefined) {
      const current = await this.get(accountId, id); // another account's site is a 404 before anything is said about the agent
      if (fields.agentId != null) await this.agents.getReferenced(accountId, fields.agentId);
      const agentId = fields.agentId !== undefined ? fields.agentId : current.agentId;
      const pinned = await this.versions.pin(accountId, agentId, fields.agentVersion, agentId !== current.agentId);
      if (pinned === undefined) delete fields.agentVersion;
      else fields.agentVersion = pinned;
    } else if (fields.agentId === null) {
      fields.agentVersion = null; // no agent, no version of it
    }
    return (await this.whileAgentExists(fields.agentId, () => this.sites.update(accountId, id, fields))) ?? Promise.reject(notFound(id));
  }

  async remove(accountId: number, id: number): Promise<void> {
    if (!(await this.sites.delete(accountId, id))) throw notFound(id);
  }

  /** A new site key, in one UPDATE: the old key names nothing from then on. */
  async rotateKey(accountId: number, id: number): Promise<WidgetSiteRow> {
    return (await this.sites.rotateKey(accountId, id, generateSiteKey())) ?? Promise.reject(notFound(id));
  }

  /** The public widget's lookup: the site key is the credential, so no account is involved. */
  async findConfigBySiteKey(siteKey: string): Promise<WidgetConfigRow> {
    const config = isSiteKeyShaped(siteKey) ? await this.sites.findConfigBySiteKey(siteKey) : undefined;
    return config ?? Promise.reject(new NotFoundException('Unknown site key'));
  }

  /** The site a widget session is started on (404 for an unknown key), with its agent or null. */
  async findSessionSiteBySiteKey(siteKey: string): Promise<WidgetSessionSiteRow> {
    const site = isSiteKeyShaped(siteKey) ? await this.sites.findSessionSiteBySiteKey(siteKey) : undefined;
    return site ?? Promise.reject(new NotFoundException('Unknown site key'));
  }

  /** The agent was checked, but may be deleted before the write: the foreign key then refuses it, a 400 like any unknown agent. */
  private async whileAgentExists<T>(agentId: number | null | undefined, write: () => Promise<T>): Promise<T> {
    try {
      return await write();
    } catch (error) {
      if (agentId != null && (error as { code?: unknown } | null)?.code === FOREIGN_KEY_VIOLATION) throw unknownAgentField(agentId);
      throw error;
    }
  }
}

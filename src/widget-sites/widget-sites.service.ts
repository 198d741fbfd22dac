import { Injectable, NotFoundException } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import { Repository } from 'typeorm';
import { AgentsService, unknownAgentField } from '../agents/agents.service';
import { CreateWidgetSiteDto } from './dto/create-widget-site.dto';
import { UpdateWidgetSiteDto } from './dto/update-widget-site.dto';
import { generateSiteKey, isSiteKeyShaped } from './site-key';
import { WidgetSite } from './widget-site.entity';
import { definedFields } from '../common/defined-fields';

const FOREIGN_KEY_VIOLATION = '23503';

/** Every management method takes the caller's account first and puts it in the WHERE of every read and write. */
@Injectable()
export class WidgetSitesService {
  constructor(
    @InjectRepository(WidgetSite) private readonly sites: Repository<WidgetSite>,
    private readonly agents: AgentsService,
  ) {}

  list(accountId: number): Promise<WidgetSite[]> {
    return this.sites.find({ where: { accountId }, order: { id: 'ASC' } });
  }

  async get(accountId: number, id: number): Promise<WidgetSite> {
    const site = await this.sites.findOneBy({ id, accountId });
    if (!site) throw new NotFoundException(`Widget site ${id} not found`);
    return site;
  }

  async create(accountId: number, dto: CreateWidgetSiteDto): Promise<WidgetSite> {
    if (dto.agentId != null) await this.agents.getReferenced(accountId, dto.agentId); // a site is answered only by its account's agent
    const site = this.sites.create({ ...definedFields(dto), accountId, siteKey: generateSiteKey() });
    return this.whileAgentExists(dto.agentId, () => this.sites.save(site));
  }

  async update(accountId: number, id: number, dto: UpdateWidgetSiteDto): Promise<WidgetSite> {
    const patch = definedFields(dto);
    if (Object.keys(patch).length === 0) return this.get(accountId, id);
    if (patch.agentId != null) {
      await this.get(accountId, id); // another account's site is a 404 before anything is said about the agent
      await this.agents.getReferenced(accountId, patch.agentId);
    }
    const { affected } = await this.whileAgentExists(patch.agentId, () => this.sites.update({ id, accountId }, patch));
    if (!affected) throw new NotFoundException(`Widget site ${id} not found`);
    return this.get(accountId, id);
  }

  async remove(accountId: number, id: number): Promise<void> {
    const { affected } = await this.sites.delete({ id, accountId });
    if (!affected) throw new NotFoundException(`Widget site ${id} not found`);
  }

  /** Replaces the site key in one UPDATE: the old key names nothing from then on. */
  async rotateKey(accountId: number, id: number): Promise<WidgetSite> {
    const { affected } = await this.sites.update({ id, accountId }, { siteKey: generateSiteKey() });
    if (!affected) throw new NotFoundException(`Widget site ${id} not found`);
    return this.get(accountId, id);
  }

  /**
   * The public widget's lookup: the site key is the credential, so no account is involved. Comes with
   * its agent (never one of another account: the management methods refuse those).
   */
  async findBySiteKey(siteKey: string): Promise<WidgetSite> {
    const site = isSiteKeyShaped(siteKey) ? await this.sites.findOne({ where: { siteKey }, relations: { agent: true } }) : null;
    if (!site) throw new NotFoundException('Unknown site key');
    if (site.agent && site.agent.accountId !== site.accountId) site.agent = null;
    return site;
  }

  /** The agent was checked, but may be deleted before the write: the foreign key then refuses it. */
  private async whileAgentExists<T>(agentId: number | null | undefined, write: () => Promise<T>): Promise<T> {
    try {
      return await write();
    } catch (error) {
      if (agentId != null && isForeignKeyViolation(error)) throw unknownAgentField(agentId);
      throw error;
    }
  }
}


function isForeignKeyViolation(error: unknown): boolean {
  const candidate = error as { code?: unknown; driverError?: { code?: unknown } } | null;
  return candidate?.code === FOREIGN_KEY_VIOLATION || candidate?.driverError?.code === FOREIGN_KEY_VIOLATION;
}

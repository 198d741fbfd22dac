import { Injectable, NotFoundException } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import { Repository } from 'typeorm';
import { AgentsService } from '../agents/agents.service';
import { RequestValidationException } from '../common/validation';
import { CreateWidgetSiteDto } from './dto/create-widget-site.dto';
import { UpdateWidgetSiteDto } from './dto/update-widget-site.dto';
import { generateSiteKey, isSiteKeyShaped } from './site-key';
import { WidgetSite } from './widget-site.entity';

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
    await this.checkAgent(accountId, dto.agentId);
    const site = this.sites.create({ ...definedFields(dto), accountId, siteKey: generateSiteKey() });
    return this.whileAgentExists(dto.agentId, () => this.sites.save(site));
  }

  async update(accountId: number, id: number, dto: UpdateWidgetSiteDto): Promise<WidgetSite> {
    const patch = definedFields(dto);
    if (Object.keys(patch).length === 0) return this.get(accountId, id);
    if (patch.agentId != null) {
      await this.get(accountId, id); // another account's site is a 404 before anything is said about the agent
      await this.checkAgent(accountId, patch.agentId);
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

  /** A site may only be answered by an agent of its own account: anything else is a 400 on `agentId`. */
  private async checkAgent(accountId: number, agentId: number | null | undefined): Promise<void> {
    if (agentId == null) return;
    try {
      await this.agents.get(accountId, agentId);
    } catch (error) {
      if (error instanceof NotFoundException) throw unknownAgent(agentId);
      throw error;
    }
  }

  /** The agent was checked, but may be deleted before the write: the foreign key then refuses it. */
  private async whileAgentExists<T>(agentId: number | null | undefined, write: () => Promise<T>): Promise<T> {
    try {
      return await write();
    } catch (error) {
      if (agentId != null && isForeignKeyViolation(error)) throw unknownAgent(agentId);
      throw error;
    }
  }
}

const unknownAgent = (agentId: number) =>
  new RequestValidationException([{ field: 'agentId', message: `Agent ${agentId} not found on this account` }]);

function isForeignKeyViolation(error: unknown): boolean {
  const candidate = error as { code?: unknown; driverError?: { code?: unknown } } | null;
  return candidate?.code === FOREIGN_KEY_VIOLATION || candidate?.driverError?.code === FOREIGN_KEY_VIOLATION;
}

/** The DTO's fields that were given (class fields without a value are own properties set to undefined). */
function definedFields<T extends object>(dto: T): Partial<T> {
  return Object.fromEntries(Object.entries(dto).filter(([, value]) => value !== undefined)) as Partial<T>;
}

import { ForbiddenException, Injectable, NotFoundException } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import { Repository } from 'typeorm';
import { CallerAccount } from '../auth/caller-account';
import { selectProperties } from '../database/select-properties';
import { Agent } from './agent.entity';
import { CreateAgentDto } from './dto/create-agent.dto';
import { UpdateAgentDto } from './dto/update-agent.dto';
import { mayUseVoice } from './voices';

const AGENT_PROPERTIES = ['id', 'accountId', 'name', 'description', 'model', 'voice', 'language', 'systemPrompt', 'createdAt', 'updatedAt'] as const;

/** Every method takes the caller's account first and puts it in the WHERE of every read and write. */
@Injectable()
export class AgentsService {
  constructor(@InjectRepository(Agent) private readonly agents: Repository<Agent>) {}

  /** Plain rows, not hydrated entities: the list is the hot path (BENCHMARKS.md, "Performance"). */
  list(accountId: number): Promise<Agent[]> {
    return selectProperties(this.agents.createQueryBuilder('agent'), AGENT_PROPERTIES)
      .where('agent.account_id = :accountId', { accountId })
      .orderBy('agent.id', 'ASC')
      .getRawMany<Agent>();
  }

  async get(accountId: number, id: number): Promise<Agent> {
    const agent = await this.agents.findOneBy({ id, accountId });
    if (!agent) throw new NotFoundException(`Agent ${id} not found`);
    return agent;
  }

  create(account: CallerAccount, dto: CreateAgentDto): Promise<Agent> {
    this.checkVoice(account, dto.voice);
    return this.agents.save(this.agents.create({ ...definedFields(dto), accountId: account.id }));
  }

  async update(account: CallerAccount, id: number, dto: UpdateAgentDto): Promise<Agent> {
    const patch = definedFields(dto);
    if (Object.keys(patch).length > 0) {
      this.checkVoice(account, patch.voice);
      const { affected } = await this.agents.update({ id, accountId: account.id }, patch);
      if (!affected) throw new NotFoundException(`Agent ${id} not found`);
    }
    return this.get(account.id, id);
  }

  async remove(accountId: number, id: number): Promise<void> {
    const { affected } = await this.agents.delete({ id, accountId });
    if (!affected) throw new NotFoundException(`Agent ${id} not found`);
  }

  private checkVoice(account: CallerAccount, voice: string | undefined): void {
    if (voice !== undefined && !mayUseVoice(voice, account)) {
      throw new ForbiddenException(`Voice ${voice} is reserved for the platform account`);
    }
  }
}

/** The DTO's fields that were given (class fields without a value are own properties set to undefined). */
function definedFields<T extends object>(dto: T): Partial<T> {
  return Object.fromEntries(Object.entries(dto).filter(([, value]) => value !== undefined)) as Partial<T>;
}

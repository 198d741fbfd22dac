import { ForbiddenException, Injectable, NotFoundException } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import { Repository } from 'typeorm';
import { CallerAccount } from '../auth/caller-account';
import { Agent } from './agent.entity';
import { CreateAgentDto } from './dto/create-agent.dto';
import { UpdateAgentDto } from './dto/update-agent.dto';
import { mayUseVoice } from './voices';

/** Every method takes the caller's account first and puts it in the WHERE of every read and write. */
@Injectable()
export class AgentsService {
  constructor(@InjectRepository(Agent) private readonly agents: Repository<Agent>) {}

  list(accountId: number): Promise<Agent[]> {
    return this.agents.find({ where: { accountId }, order: { id: 'ASC' } });
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

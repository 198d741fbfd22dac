import { ForbiddenException, Injectable, NotFoundException } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import { Repository } from 'typeorm';
import { CallerAccount } from '../auth/caller-account';
import { RequestValidationException } from '../common/validation';
import { PreparedSelect } from '../database/prepared-select';
import { returningProperties, selectProperties } from '../database/select-properties';
import { Agent } from './agent.entity';
import { CreateAgentDto } from './dto/create-agent.dto';
import { UpdateAgentDto } from './dto/update-agent.dto';
import { mayUseVoice } from './voices';
import { definedFields } from '../common/defined-fields';

const AGENT_PROPERTIES = ['id', 'accountId', 'name', 'description', 'model', 'voice', 'language', 'systemPrompt', 'createdAt', 'updatedAt'] as const;

/** Every method takes the caller's account first and puts it in the WHERE of every read and write. */
@Injectable()
export class AgentsService {
  /** Plain rows, not hydrated entities, from SQL built once: the list is the hot path (BENCHMARKS.md, "Performance"). */
  private readonly listQuery = new PreparedSelect<{ accountId: number }, Agent>(['accountId'], ({ accountId }) =>
    selectProperties(this.agents.createQueryBuilder('agent'), AGENT_PROPERTIES)
      .where('agent.account_id = :accountId', { accountId })
      .orderBy('agent.id', 'ASC'),
  );
  /** One agent: `GET /agents/{agentId}`, the answer to a PATCH, and every request body that names an agent. */
  private readonly getQuery = new PreparedSelect<{ accountId: number; id: number }, Agent>(['accountId', 'id'], ({ accountId, id }) =>
    selectProperties(this.agents.createQueryBuilder('agent'), AGENT_PROPERTIES)
      .where('agent.account_id = :accountId', { accountId })
      .andWhere('agent.id = :id', { id }),
  );

  /** The agent a PATCH wrote, as the lookups give it: the UPDATE answers, no second query. */
  private readonly returning: string;

  constructor(@InjectRepository(Agent) private readonly agents: Repository<Agent>) {
    this.returning = returningProperties(agents.metadata, AGENT_PROPERTIES);
  }

  list(accountId: number): Promise<Agent[]> {
    return this.listQuery.many({ accountId });
  }

  async get(accountId: number, id: number): Promise<Agent> {
    const agent = await this.getQuery.one({ accountId, id });
    if (!agent) throw new NotFoundException(`Agent ${id} not found`);
    return agent;
  }

  /**
   * The agent a request body names in `agentId` (a call's, a widget site's): it must be one of the account's,
   * and a body field that names something else is a 400 on that field, not a 404.
   */
  async getReferenced(accountId: number, agentId: number): Promise<Agent> {
    const agent = await this.getQuery.one({ accountId, id: agentId });
    if (!agent) throw unknownAgentField(agentId);
    return agent;
  }

  create(account: CallerAccount, dto: CreateAgentDto): Promise<Agent> {
    this.checkVoice(account, dto.voice);
    // One INSERT is atomic by itself: TypeORM's default BEGIN and COMMIT around it were two more round trips.
    return this.agents.save(this.agents.create({ ...definedFields(dto), accountId: account.id }), { transaction: false });
  }

  async update(account: CallerAccount, id: number, dto: UpdateAgentDto): Promise<Agent> {
    const patch = definedFields(dto);
    if (Object.keys(patch).length === 0) return this.get(account.id, id);
    this.checkVoice(account, patch.voice);
    const { raw } = await this.agents
      .createQueryBuilder()
      .update()
      .set(patch)
      .where('id = :id AND account_id = :accountId', { id, accountId: account.id })
      .returning(this.returning)
      .execute();
    const [agent] = raw as Agent[];
    if (!agent) throw new NotFoundException(`Agent ${id} not found`);
    return agent;
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

export const unknownAgentField = (agentId: number) =>
  new RequestValidationException([{ field: 'agentId', message: `agentId ${agentId} is not an agent of this account` }]);

import { Column, Entity, Index, JoinColumn, ManyToOne, UpdateDateColumn } from 'typeorm';
import { Agent } from '../agents/agent.entity';
import { AccountOwnedEntity } from '../database/account-owned.entity';

/** The carriers a number can be on (contract section 17: Twilio, or one that speaks its API). */
export const PHONE_PROVIDERS = ['twilio'] as const;
export type PhoneProvider = (typeof PHONE_PROVIDERS)[number];

/** A phone number of the account's carrier account, answered by one of its agents. */
@Entity('phone_numbers')
@Index(['accountId', 'id'])
@Index(['accountId', 'number'], { unique: true })
export class PhoneNumber extends AccountOwnedEntity {
  /** The agent that answers it: always one of the same account (checked by the service); null for none. */
  @Index() // for ON DELETE SET NULL when an agent is deleted
  @Column({ type: 'integer', nullable: true })
  agentId: number | null;

  /** Deleting the agent leaves the number without one. */
  @ManyToOne(() => Agent, { onDelete: 'SET NULL', nullable: true })
  @JoinColumn({ name: 'agent_id' })
  agent?: Agent | null;

  /** The version of the agent its calls run (null: the agent's published version); cleared with the agent. */
  @Column({ type: 'integer', nullable: true })
  agentVersion: number | null;

  /** E.164, as given: `+` and 8–15 digits. */
  @Column({ type: 'varchar', length: 16 })
  number: string;

  @Column({ type: 'varchar', length: 20 })
  provider: PhoneProvider;

  @Column({ type: 'varchar', length: 200 })
  label: string;

  /** The agent's first sentence on an inbound call; "" for none. */
  @Column({ type: 'varchar', length: 500 })
  greeting: string;

  /** `AC` and 32 hex digits. */
  @Column({ type: 'varchar', length: 34 })
  twilioAccountSid: string;

  /** The auth token, sealed with the telephony secret (src/telephony/auth-token-box.ts): never returned, never logged. */
  @Column({ type: 'bytea' })
  twilioAuthTokenSealed: Buffer;

  @UpdateDateColumn({ type: 'timestamptz' })
  updatedAt: Date;
}

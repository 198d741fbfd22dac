import { Column, Entity, Index, UpdateDateColumn } from 'typeorm';
import { AccountOwnedEntity } from '../database/account-owned.entity';
import type { ToolType } from './tool-rules';

/**
 * A tool an account's agents may call during a conversation (contract section 18). The columns a type does not
 * use are null (a webhook tool's url, timeout, words while running and secrets; a transfer's number). (account_id,
 * id) is unique so that agent_tools references a tool with the account in the key; (account_id, name) because the
 * model calls a tool by its name.
 */
@Entity('tools')
@Index(['accountId', 'id'], { unique: true })
@Index(['accountId', 'name'], { unique: true })
export class Tool extends AccountOwnedEntity {
  @Column({ type: 'varchar', length: 20 })
  type: ToolType;

  @Column({ type: 'varchar', length: 64 })
  name: string;

  @Column({ type: 'varchar', length: 1000 })
  description: string;

  /** A webhook tool's JSON Schema of its arguments, kept as written (`json`, not `jsonb`: the order of its keys stays). */
  @Column({ type: 'json', nullable: true })
  parameters: object | null;

  @Column({ type: 'varchar', length: 2000, nullable: true })
  url: string | null;

  @Column({ type: 'integer', nullable: true })
  timeoutSeconds: number | null;

  @Column({ type: 'varchar', length: 200, nullable: true })
  speakWhileRunning: string | null;

  /** A transfer_call tool's number (E.164). */
  @Column({ type: 'varchar', length: 16, nullable: true })
  number: string | null;

  /** A webhook tool's `whsec_…` (needed in clear to sign its requests): shown once, never in a response after that, never logged. */
  @Column({ type: 'varchar', length: 100, nullable: true })
  secret: string | null;

  /** The secret before the last rotation: requests are signed with it too until previousSecretExpiresAt. */
  @Column({ type: 'varchar', length: 100, nullable: true })
  previousSecret: string | null;

  @Column({ type: 'timestamptz', nullable: true })
  previousSecretExpiresAt: Date | null;

  @UpdateDateColumn({ type: 'timestamptz' })
  updatedAt: Date;
}

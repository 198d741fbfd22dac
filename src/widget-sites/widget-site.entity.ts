import { Column, Entity, Index, JoinColumn, ManyToOne, UpdateDateColumn } from 'typeorm';
import { AccountOwnedEntity } from '../database/account-owned.entity';
import { Agent } from '../agents/agent.entity';
import { MAX_ALLOWED_DOMAIN_LENGTH } from './allowed-domain';
import type { WidgetAvatar, WidgetMode, WidgetPosition } from './widget-options';

@Entity('widget_sites')
@Index(['accountId', 'id'])
export class WidgetSite extends AccountOwnedEntity {
  /** The agent that answers this site: always one of the same account (checked by the service). */
  @Index() // for ON DELETE SET NULL when an agent is deleted
  @Column({ type: 'integer', nullable: true })
  agentId: number | null;

  /** Deleting the agent leaves the site without one. */
  @ManyToOne(() => Agent, { onDelete: 'SET NULL', nullable: true })
  @JoinColumn({ name: 'agent_id' })
  agent?: Agent | null;

  /** The version of the agent its conversations run (null: the agent's published version); cleared with the agent. */
  @Column({ type: 'integer', nullable: true })
  agentVersion: number | null;

  @Column({ type: 'varchar', length: 200 })
  name: string;

  /** Normalised: "", a host, `host:port` or `*.host`; every valid value fits (MAX_ALLOWED_DOMAIN_LENGTH). */
  @Column({ type: 'varchar', length: MAX_ALLOWED_DOMAIN_LENGTH })
  allowedDomain: string;

  @Column({ type: 'varchar', length: 20 })
  widgetPosition: WidgetPosition;

  @Column({ type: 'varchar', length: 40 })
  widgetLabel: string;

  @Column({ type: 'varchar', length: 20 })
  widgetAvatar: WidgetAvatar;

  @Column({ type: 'varchar', length: 500 })
  widgetGreeting: string;

  @Column({ type: 'varchar', length: 10 })
  widgetMode: WidgetMode;

  @Column({ type: 'boolean' })
  widgetAskName: boolean;

  @Column({ type: 'boolean' })
  widgetAskPhone: boolean;

  /** The public key of the embed snippet (the public widget routes look sites up by it). */
  @Index({ unique: true })
  @Column({ type: 'varchar', length: 64 })
  siteKey: string;

  @UpdateDateColumn({ type: 'timestamptz' })
  updatedAt: Date;
}

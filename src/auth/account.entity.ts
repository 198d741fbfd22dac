import { Column, CreateDateColumn, Entity, PrimaryGeneratedColumn } from 'typeorm';

@Entity('accounts')
export class Account {
  @PrimaryGeneratedColumn()
  id: number;

  @Column({ type: 'varchar', length: 200 })
  name: string;

  /** The platform's own account: may use preview and next-generation voices. */
  @Column({ type: 'boolean', default: false })
  isPlatform: boolean;

  @CreateDateColumn({ type: 'timestamptz' })
  createdAt: Date;
}

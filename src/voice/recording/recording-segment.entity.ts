import { Column, Entity, JoinColumn, ManyToOne, PrimaryColumn } from 'typeorm';
import { Conversation } from '../../conversations/conversation.entity';

/**
 * One voice socket's part of a spoken conversation's recording (an MP3 object in the recording storage), kept
 * until the conversation's call gets its recording: the parts, in order, joined into one (RecordingAssembly).
 */
@Entity('conversation_recording_segments')
export class RecordingSegment {
  @PrimaryColumn({ type: 'integer' })
  accountId: number;

  @PrimaryColumn({ type: 'uuid' })
  conversationId: string;

  @PrimaryColumn({ type: 'integer' })
  seq: number;

  /** Deleting the conversation deletes the rows; the call's erasure deletes their objects first (RecordingAssembly). */
  @ManyToOne(() => Conversation, { onDelete: 'CASCADE' })
  @JoinColumn([
    { name: 'account_id', referencedColumnName: 'accountId' },
    { name: 'conversation_id', referencedColumnName: 'id' },
  ])
  conversation?: Conversation;

  /** The object's key in the recording storage: never shown nor logged. */
  @Column({ type: 'varchar', length: 200 })
  storageKey: string;

  @Column({ type: 'double precision' })
  seconds: number;

  @Column({ type: 'bigint' })
  bytes: string;

  @Column({ type: 'timestamptz', default: () => 'now()' })
  createdAt: Date;
}

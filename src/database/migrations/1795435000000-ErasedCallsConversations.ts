import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Erasing a call now erases the conversation it was (CallsService.alsoErase). Before, the conversation and its
 * messages stayed, still served to its token: this deletes those of calls already erased. A conversation ends
 * and records its call in one transaction when the visitor said something, so an ended one with a visitor's
 * message and no call is exactly one whose call was erased. Nothing to undo.
 */
export class ErasedCallsConversations1795435000000 implements MigrationInterface {
  name = 'ErasedCallsConversations1795435000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`
      DELETE FROM conversations c
       WHERE c.status = 'ended'
         AND EXISTS (SELECT FROM conversation_messages m WHERE m.account_id = c.account_id AND m.conversation_id = c.id AND m.speaker = 'user')
         AND NOT EXISTS (SELECT FROM calls WHERE calls.account_id = c.account_id AND calls.id = c.id)`);
  }

  async down(): Promise<void> {
    // What was erased stays erased.
  }
}

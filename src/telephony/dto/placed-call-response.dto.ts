import { ApiProperty } from '@nestjs/swagger';
import { ApiUuid } from '../../common/api-formats';

/** A call the carrier has queued: its call (`GET /calls/{callId}` once it ends) and its conversation, the same id. */
export interface PlacedCall {
  callId: string;
  conversationId: string;
  status: 'queued';
}

export class PlacedCallResponse {
  /** The call it becomes once it ends (busy, no answer and failed calls too). @example "5f0c2a7e-8d3b-4c1e-9a6f-2b7d4e8c1a90" */
  @ApiUuid()
  callId: string;
  /** The conversation the call carries (the same id). @example "5f0c2a7e-8d3b-4c1e-9a6f-2b7d4e8c1a90" */
  @ApiUuid()
  conversationId: string;
  /** The carrier has accepted the call and will dial it. */
  @ApiProperty({ enum: ['queued'], example: 'queued' })
  status: 'queued';
}

export const toPlacedCallResponse = (call: PlacedCall): PlacedCallResponse => ({
  callId: call.callId,
  conversationId: call.conversationId,
  status: call.status,
});

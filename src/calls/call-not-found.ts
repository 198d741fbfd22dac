import { NotFoundException } from '@nestjs/common';

/** The 404 of a call that does not exist, is another account's, or whose id is not even a UUID. */
export const callNotFound = (callId: string) => new NotFoundException(`Call ${callId} not found`);

import type { Type } from '@nestjs/common';
import { getSchemaPath } from '@nestjs/swagger';

/**
 * The messages one side of a socket sends, each a class documented with @nestjs/swagger, told apart by one field
 * (`type` on the voice socket, `event` on the carrier's media stream). In the OpenAPI document each class is a schema
 * of components.schemas, and the union one more: `oneOf` them with a `discriminator` (a generator makes a tagged
 * union of it).
 */
export interface MessageUnion {
  /** The union's schema name, e.g. `VoiceServerMessage`. */
  name: string;
  description: string;
  /** The field that names the message. */
  discriminator: string;
  /** Each message's class, by the value of that field. */
  members: Record<string, Type<unknown>>;
}

/** The union's schema: `oneOf` its members, with the discriminator's mapping. */
export function messageUnionSchema({ description, discriminator, members }: MessageUnion): object {
  const mapping = Object.fromEntries(Object.entries(members).map(([value, type]) => [value, getSchemaPath(type)]));
  return {
    description,
    oneOf: Object.values(mapping).map(($ref) => ({ $ref })),
    discriminator: { propertyName: discriminator, mapping },
  };
}

/** `$ref`s to unions, for a route's `x-messages` (the socket's messages each way, which a description names). */
export const messagesExtension = (messages: { receives: MessageUnion; sends: MessageUnion }) => ({
  receives: { $ref: `#/components/schemas/${messages.receives.name}` },
  sends: { $ref: `#/components/schemas/${messages.sends.name}` },
});

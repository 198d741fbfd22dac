import { IsBoolean, IsString } from 'class-validator';
import { CallerName, CallerPhone } from '../../calls/dto/create-call.dto';
import { CodePointLength, IsOmittable, MaxCodePointLength, Trim } from '../../common/validators';

/** Who is talking, when they said (the call's `name` and `phone`). */
export class VisitorDto {
  /** The visitor's name, at most 200 characters; "" when not given. @example "Priya Sharma" */
  @CallerName()
  name?: string = '';

  /** The visitor's number: digits, spaces and `+ - ( ) . /`, at most 50 characters; "" when not given. @example "+91-98765-43210" */
  @CallerPhone()
  phone?: string = '';
}

/** A conversation with an agent through the API (the dashboard's test-call button). */
export class StartConversationDto extends VisitorDto {
  /** A test conversation becomes a test call: readable by id, never listed. @example true */
  @IsOmittable()
  @IsBoolean()
  test?: boolean = true;
}

/** A widget visitor's conversation with the site's agent. */
export class StartWidgetSessionDto extends VisitorDto {
  /** The site key of the embed snippet. @example "ws_3q2n8Jx0cW1sYvT5bK7dLmPz4RfH9gAe" */
  @IsString()
  @MaxCodePointLength(100)
  siteKey: string;
}

/** A visitor's message. */
export class SendMessageDto {
  /** 1–2,000 characters after trimming. @example "Do you deliver on Sundays?" */
  @Trim()
  @IsString()
  @CodePointLength(1, 2_000)
  text: string;
}

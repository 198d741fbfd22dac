import { createParamDecorator, ExecutionContext } from '@nestjs/common';
import { CallerAccount } from './caller-account';

export interface RequestWithAccount {
  account?: CallerAccount;
}

/**
 * The caller's account, as the API-key guard attached it. Throws (a 500) when there is none, so that a
 * route that is public by mistake can never run a query with an undefined account id.
 */
export const CurrentAccount = createParamDecorator((_: unknown, context: ExecutionContext): CallerAccount => {
  const account = context.switchToHttp().getRequest<RequestWithAccount>().account;
  if (!account) throw new Error('CurrentAccount used on a route without an authenticated account');
  return account;
});

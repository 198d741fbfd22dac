/** The account a request acts for, attached by the API-key guard. */
export interface CallerAccount {
  id: number;
  name: string;
  isPlatform: boolean;
}

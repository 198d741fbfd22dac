/** The characters of a phone number: digits, spaces and the usual punctuation (`+`, `-`, `(`, `)`, `.`, `/`). */
const PHONE_CHARACTERS = String.raw`0-9+\-().\/\s`;

/** A phone number as a call may store it: only those characters (or empty). */
export const PHONE_PATTERN = new RegExp(`^[${PHONE_CHARACTERS}]*$`);

/** A search made only of phone characters, with at least one digit: it also matches numbers with their punctuation ignored. */
export const isPhoneLikeSearch = (search: string) => PHONE_PATTERN.test(search) && /[0-9]/.test(search);

/** The digits of a number or a search. */
export const digitsOf = (text: string) => text.replace(/[^0-9]/g, '');

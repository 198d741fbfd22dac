/**
 * The length of a text as PostgreSQL counts it (`char_length`, and the limit of `varchar(n)`): Unicode code
 * points. A surrogate pair (an astral character such as an emoji) is one; a combining mark, a variation
 * selector (U+FE0E, U+FE0F) and a zero-width joiner are one each. (validator.js's isLength, behind
 * class-validator's @Length and @MaxLength, does not count variation selectors: a name of 200 × "a\uFE0F"
 * passed it and was then refused by PostgreSQL.)
 */
export function codePointLength(text: string): number {
  let length = text.length;
  for (let index = 0; index < text.length - 1; index++) {
    const code = text.charCodeAt(index);
    if (code >= 0xd800 && code <= 0xdbff) {
      const next = text.charCodeAt(index + 1);
      if (next >= 0xdc00 && next <= 0xdfff) {
        length--;
        index++;
      }
    }
  }
  return length;
}

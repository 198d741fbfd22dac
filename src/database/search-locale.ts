import { DataSource } from 'typeorm';

/**
 * pg_trgm (the calls search index) classifies characters with the database's LC_CTYPE. Under "C" or "POSIX"
 * every non-ASCII letter is a word break to it: names in Devanagari, Bengali, Tamil, CJK or with accents
 * get no trigrams, and their searches run by filtering the account's list instead of through the index —
 * correct, but slower. Returns the warning to show at start-up, or null when the locale is fine.
 */
export async function searchLocaleWarning(dataSource: Pick<DataSource, 'query'>): Promise<string | null> {
  const [{ ctype }] = await dataSource.query<{ ctype: string }[]>(
    'SELECT datctype AS ctype FROM pg_database WHERE datname = current_database()',
  );
  if (ctype !== 'C' && ctype !== 'POSIX') return null;
  return (
    `the database's LC_CTYPE is ${ctype}: searches of names in non-Latin scripts cannot use the trigram index. ` +
    `Create the database with LC_CTYPE 'C.UTF-8' (or another UTF-8 locale); the embedded PostgreSQL does so for new data directories.`
  );
}

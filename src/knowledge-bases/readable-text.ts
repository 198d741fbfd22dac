import { isProbablyReaderable, Readability } from '@mozilla/readability';
import { convert, HtmlToTextOptions } from 'html-to-text';
import { parseHTML } from 'linkedom';

/**
 * The readable text of an HTML page: Mozilla Readability (Firefox's reader view) picks the article out of the
 * page (navigation, footers, sidebars and ads left behind) on linkedom's DOM; html-to-text turns the article's
 * HTML into plain text with its structure (a blank line between paragraphs, headings and list items on their
 * own lines), which passages are then cut along. A page Readability does not take for an article (too short,
 * not a document: its own isProbablyReaderable) is converted whole, without its navigation, header, footer,
 * scripts and forms.
 *
 * CPU-heavy on large pages: the service runs it in a worker thread (readable-text.worker.ts), so that requests
 * are not held up.
 */
export function readableText(html: string): string {
  const { document } = parseHTML(html) as { document: ParsedDocument };
  const title = document.querySelector('title')?.textContent?.trim() ?? '';
  const article = isProbablyReaderable(document) ? new Readability(document).parse() : null;
  const text = article?.content ? convert(article.content, CONVERT_OPTIONS) : convert(html, WHOLE_PAGE_OPTIONS);
  const heading = (article?.title || title).trim();
  // eslint-disable-next-line no-control-regex -- NUL is what this removes (PostgreSQL text cannot hold it)
  const body = text.replace(/\u0000/g, '').trim();
  return heading && !body.startsWith(heading) ? `${heading}\n\n${body}` : body;
}

/**
 * What is read here of linkedom's document. Its types (and Readability's) name the DOM library's Window and
 * Document, which this project does not load (lib: ES2023): unresolved, they would make the document untyped.
 */
interface ParsedDocument {
  querySelector(selector: string): { textContent: string | null } | null;
}

const CONVERT_OPTIONS: HtmlToTextOptions = {
  wordwrap: false,
  selectors: [
    { selector: 'a', options: { ignoreHref: true } },
    { selector: 'img', format: 'skip' },
    ...['h1', 'h2', 'h3', 'h4', 'h5', 'h6'].map((selector) => ({ selector, options: { uppercase: false } })),
    { selector: 'table', format: 'dataTable', options: { uppercaseHeaderCells: false } },
  ],
};

const WHOLE_PAGE_OPTIONS: HtmlToTextOptions = {
  ...CONVERT_OPTIONS,
  baseElements: { selectors: ['body'] },
  selectors: [
    ...CONVERT_OPTIONS.selectors!,
    ...['nav', 'header', 'footer', 'aside', 'script', 'style', 'noscript', 'form', 'button', 'svg', 'iframe'].map((selector) => ({
      selector,
      format: 'skip',
    })),
  ],
};

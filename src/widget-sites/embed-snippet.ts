/** Bump when embed.js changes in a way caches must not hide: new snippets load `?v=<version>`. */
export const WIDGET_SCRIPT_VERSION = 2;

const escapeAttribute = (value: string) => value.replace(/&/g, '&amp;').replace(/"/g, '&quot;').replace(/</g, '&lt;').replace(/>/g, '&gt;');

/** The one tag a customer pastes into their page. */
export function embedSnippet(publicBaseUrl: string, siteKey: string): string {
  const src = `${publicBaseUrl.replace(/\/+$/, '')}/widget/embed.js?v=${WIDGET_SCRIPT_VERSION}`;
  return `<script src="${escapeAttribute(src)}" data-site-key="${escapeAttribute(siteKey)}" async></script>`;
}

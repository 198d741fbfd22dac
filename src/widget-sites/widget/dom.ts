/** The building blocks of the widget's shadow tree. */
import { AVATARS } from './styles';

export function element<K extends keyof HTMLElementTagNameMap>(tag: K, className = '', text = ''): HTMLElementTagNameMap[K] {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text) node.textContent = text;
  return node;
}

export function button(className: string, text = '', label = ''): HTMLButtonElement {
  const node = element('button', className, text);
  node.type = 'button';
  if (label) node.setAttribute('aria-label', label);
  return node;
}

export function avatar(kind: string): HTMLSpanElement {
  const node = element('span', 'avatar');
  node.setAttribute('aria-hidden', 'true');
  node.innerHTML = '<svg viewBox="0 0 24 24" xmlns="http://www.w3.org/2000/svg">' + (AVATARS[kind] || AVATARS.default) + '</svg>';
  return node;
}

/** At most max characters as the service counts them, in code points (maxLength would count an emoji as 2). */
export function limitCharacters(input: HTMLInputElement | HTMLTextAreaElement, max: number): void {
  input.addEventListener('input', () => {
    const characters = Array.from(input.value);
    if (characters.length > max) input.value = characters.slice(0, max).join('');
  });
}

export function field(
  form: HTMLElement,
  label: string,
  name: string,
  type: string,
  autocomplete: string,
  maxCharacters: number,
): HTMLInputElement {
  const wrapper = element('label', '', label);
  const input = element('input');
  input.name = name;
  input.type = type;
  input.required = true;
  limitCharacters(input, maxCharacters);
  input.setAttribute('autocomplete', autocomplete);
  if (type === 'tel') {
    input.pattern = '[0-9+\\(\\)\\-. ]{6,20}';
    input.title = 'A phone number, digits with + ( ) - . allowed';
  }
  wrapper.appendChild(input);
  form.appendChild(wrapper);
  return input;
}

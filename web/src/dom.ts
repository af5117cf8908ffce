// Small DOM helpers shared by the play page's modules.

/** $ returns the element matching sel, or throws: the page's HTML always has it. */
export const $ = <T extends HTMLElement = HTMLElement>(sel: string): T => {
  const e = document.querySelector<T>(sel);
  if (!e) throw new Error(`page: missing ${sel}`);
  return e;
};

/** el builds an element with attributes ("class" sets className) and children. */
export function el<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  attrs: Record<string, string> = {},
  ...children: (Node | string | null | undefined | false)[]
): HTMLElementTagNameMap[K] {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (k === "class") e.className = v;
    else e.setAttribute(k, v);
  }
  for (const c of children) if (c != null && c !== false) e.append(c);
  return e;
}

/** button builds a button that runs onClick. */
export function button(label: string, attrs: Record<string, string>, onClick: () => void): HTMLButtonElement {
  const b = el("button", { type: "button", ...attrs }, label);
  b.onclick = onClick;
  return b;
}

/**
 * DOM helpers shared by the program view's details panel and the tensor, scope and stepper
 * views (a leaf module: it imports nothing).
 */

/** An element with a class and optional text. */
export function el<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  className?: string,
  text?: string
): HTMLElementTagNameMap[K] {
  const node = document.createElement(tag);
  if (className) {
    node.className = className;
  }
  if (text !== undefined) {
    node.textContent = text;
  }
  return node;
}

/** `[-1, 13]`, or `?` when unknown. */
export function shapeText(shape: number[] | null | undefined): string {
  return shape ? `[${shape.join(', ')}]` : '?';
}

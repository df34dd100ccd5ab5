/**
 * The views' stylesheet, injected once into the page: the standalone viewer is a single
 * script (HTML pages inline it), so it carries its CSS as text.
 */
import css from '../style/index.css';

const STYLE_ID = 'fluid-nb-viewer-style';

/** Add the stylesheet to the document unless it is there already. */
export function injectStyle(doc: Document = document): void {
  if (doc.getElementById(STYLE_ID)) {
    return;
  }
  const style = doc.createElement('style');
  style.id = STYLE_ID;
  style.textContent = css;
  doc.head.appendChild(style);
}

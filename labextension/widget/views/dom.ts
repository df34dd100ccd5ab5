/**
 * Small DOM helpers and the one stylesheet shared by the tensor, scope and stepper views.
 * The views are plain DOM (no framework) so the standalone viewer and the widget share them.
 */

import { el, shapeText } from '../../src/dom';

/** An element with a class and optional text. */
export const h = el;
export { shapeText };

/** A number as people read it: integers whole, floats to 4 significant digits. */
export function numberText(value: unknown): string {
  if (typeof value === 'number') {
    return Number.isInteger(value) ? String(value) : value.toPrecision(4).replace(/\.?0+$/, '');
  }
  return String(value);
}

/** `1.5 KB` style byte counts. */
export function bytesText(bytes: number): string {
  if (bytes < 1024) {
    return `${bytes} B`;
  }
  if (bytes < 1024 * 1024) {
    return `${(bytes / 1024).toFixed(1)} KB`;
  }
  return `${(bytes / 1024 / 1024).toFixed(1)} MB`;
}

/** The colour of top-level sequence `index`: hues spread by the golden angle, so
 * neighbouring sequences never look alike however many there are. */
export function sequenceColour(index: number, alpha = 0.22): string {
  const hue = (index * 137.508) % 360;
  return `hsla(${hue.toFixed(1)}, 70%, 50%, ${alpha})`;
}

const STYLE_ID = 'fluid-nb-views-style';

const CSS = `
.fluid-nb-view { font-family: var(--jp-ui-font-family, sans-serif); font-size: 12px;
  color: var(--jp-ui-font-color1, #222); }
.fluid-nb-view code, .fluid-nb-view .fluid-nb-mono { font-family: var(--jp-code-font-family, monospace); }
.fluid-nb-view table { border-collapse: collapse; margin: 4px 0; }
.fluid-nb-view td, .fluid-nb-view th { border: 1px solid var(--jp-border-color2, #ddd);
  padding: 1px 6px; text-align: left; vertical-align: top; }
.fluid-nb-view th { background: var(--jp-layout-color2, #f3f3f3); font-weight: 600; }
.fluid-nb-head { font-weight: 600; margin: 2px 0 4px; }
.fluid-nb-note { color: var(--jp-ui-font-color2, #666); font-style: italic; }
.fluid-nb-seq { border: 1px solid var(--jp-border-color1, #999); border-radius: 4px;
  padding: 2px 4px 4px; margin: 3px 0; }
.fluid-nb-seq-empty { border-style: dashed; min-height: 14px; }
.fluid-nb-seq-label { font-size: 10px; color: var(--jp-ui-font-color2, #555); }
.fluid-nb-rows { display: flex; flex-wrap: wrap; gap: 2px; }
.fluid-nb-row { border: 1px solid var(--jp-border-color2, #ccc); border-radius: 3px; padding: 0 4px;
  background: var(--jp-layout-color0, #fff); font-family: var(--jp-code-font-family, monospace); }
.fluid-nb-row-index { color: var(--jp-ui-font-color2, #888); margin-right: 4px; font-size: 10px; }
.fluid-nb-scope > summary { cursor: pointer; font-weight: 600; }
.fluid-nb-scope { margin-left: 1em; }
.fluid-nb-stepper-controls { display: flex; align-items: center; gap: 8px; margin: 4px 0; }
.fluid-nb-stepper-controls input[type=range] { flex: 1; max-width: 480px; }
.fluid-nb-batch { display: flex; gap: 3px; align-items: flex-end; margin: 4px 0; }
.fluid-nb-batch-cell { width: 22px; text-align: center; border-radius: 3px; padding: 2px 0;
  border: 1px solid var(--jp-border-color1, #999); }
.fluid-nb-batch-cell.gone { opacity: 0.25; border-style: dashed; }
.fluid-nb-bar { display: inline-block; height: 10px; background: var(--jp-brand-color1, #1976d2);
  margin-right: 4px; vertical-align: middle; }
.fluid-nb-current td { background: var(--jp-brand-color3, #bbdefb); }
`;

/** Add the views' stylesheet to the page once (several widgets share it). */
export function ensureStyle(): void {
  if (typeof document === 'undefined' || document.getElementById(STYLE_ID)) {
    return;
  }
  const style = document.createElement('style');
  style.id = STYLE_ID;
  style.textContent = CSS;
  document.head.appendChild(style);
}

/** A table from a header row and body rows of cells (strings or nodes). */
export function table(head: string[], rows: (string | Node)[][], className = ''): HTMLTableElement {
  const t = h('table', className);
  const top = t.createTHead().insertRow();
  for (const title of head) {
    top.appendChild(h('th', '', title));
  }
  const body = t.createTBody();
  for (const cells of rows) {
    const tr = body.insertRow();
    for (const cell of cells) {
      const td = tr.insertCell();
      if (typeof cell === 'string') {
        td.textContent = cell;
      } else {
        td.appendChild(cell);
      }
    }
  }
  return t;
}
